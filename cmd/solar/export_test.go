package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// storeContents is, per repository of the layout, the newest version, its
// manifest digest and its signatures' digests, as store s holds them.
func storeContents(t *testing.T, s store.Store, repos []string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, name := range repos {
		repo, err := s.Repository(ctx, name)
		require.NoError(t, err)
		v, err := publish.Newest(ctx, repo)
		require.NoError(t, err)
		desc, err := repo.Resolve(ctx, v)
		require.NoError(t, err)
		refs, err := registry.Referrers(ctx, repo.(content.ReadOnlyGraphStorage), desc, api.MediaTypeSigstoreBundle)
		require.NoError(t, err)
		var sigs []string
		for _, r := range refs {
			sigs = append(sigs, r.Digest.String())
		}
		slices.Sort(sigs)
		out[name] = v + " " + desc.Digest.String() + " " + strings.Join(sigs, ",")
	}
	return out
}

// rewrite writes a copy of the archive src with change applied to its
// entries (name -> data; nil data drops the entry) and extra appended.
func rewrite(t *testing.T, src string, change func(name string, data []byte) []byte, extra ...string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(b)), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		if data = change(h.Name, data); data == nil && h.Typeflag == tar.TypeReg {
			continue
		}
		h.Size = int64(len(data))
		require.NoError(t, tw.WriteHeader(h))
		_, err = tw.Write(data)
		require.NoError(t, err)
	}
	for _, name := range extra {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o600, Size: 2}))
		_, err = tw.Write([]byte("hi"))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	dst := filepath.Join(t.TempDir(), "tampered.tar")
	require.NoError(t, os.WriteFile(dst, out.Bytes(), 0o600))
	return dst
}

// TestExportPushArchive: render --registry with a signing key, export, and
// push of the archive into that (empty) registry puts there exactly the
// layout's versions, manifests and signatures; export is deterministic; a
// second push writes nothing; a tampered archive is refused before
// anything is written.
func TestExportPushArchive(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	registryName := proxy.Host + "/solar"
	priv, pub := writeKey(t, t.TempDir(), "key")
	login := []string{"--registry", registryName, "--plain-http", "--username", reg.Username, "--password-stdin"}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(reg.Password), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code, _, stderr := cli(append([]string{"render", "--no-credentials", "-n", "beta", "--signing-key", priv, "--out", out, "../../examples"}, login...)...)
	require.Equal(t, 0, code, stderr)

	bundle := filepath.Join(dir, "bundle.tar")
	code, stdout, stderr := cli("export", out, "--out", bundle, "-o", "json")
	require.Equal(t, 0, code, stderr)
	var s archive.Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &s), stdout)
	require.NotEmpty(t, s.Versions)
	info, err := os.Stat(bundle)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	first, err := os.ReadFile(bundle)
	require.NoError(t, err)
	code, stdout, stderr = cli("export", out, "--out", bundle)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "wrote "+bundle+": ", "the summary is conversation")
	again, err := os.ReadFile(bundle)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(first, again), "export is deterministic")

	for what, c := range tamperedArchives(t, bundle, s) {
		code, _, stderr = cli(append([]string{"push", c.file, "--key", pub}, login...)...)
		assert.Equal(t, 1, code, what)
		assert.Contains(t, stderr, "archive refused, nothing pushed", what)
		assert.Contains(t, stderr, c.want, what)
	}
	assert.Zero(t, countproxy.Writes(proxy.Take()), "a refused archive writes nothing")
	code, stdout, stderr = cli(append([]string{"push", bundle, "--key", pub, "--dry-run"}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m) would create$`, stdout, "a dry run says would")
	assert.Zero(t, countproxy.Writes(proxy.Take()), "a dry run writes nothing")

	code, stdout, stderr = cli(append([]string{"push", bundle, "--key", pub}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.Len(t, strings.Split(strings.TrimSpace(stdout), "\n"), 1+len(s.Versions), "a header and a row per version")
	l, err := store.OpenLayout(context.Background(), out, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	repos, err := l.Repositories(context.Background(), "")
	require.NoError(t, err)
	remote, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	inRegistry, err := remote.Repositories(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, repos, inRegistry)
	assert.Equal(t, storeContents(t, l, repos), storeContents(t, remote, repos), "the registry holds what the layout held")

	proxy.Take()
	code, stdout, stderr = cli(append([]string{"push", bundle, "--key", pub}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, "create")
	assert.Zero(t, countproxy.Writes(proxy.Take()), "a second push writes nothing")
}

// tamperedArchives are changed copies of the archive bundle, by what was
// changed, with what push must say of each.
func tamperedArchives(t *testing.T, bundle string, s archive.Summary) map[string]struct{ file, want string } {
	t.Helper()
	sig := s.Versions[0].Signatures[0].Encoded()
	manifest := s.Versions[1].Manifest.Encoded()
	return map[string]struct{ file, want string }{
		"changed byte": {rewrite(t, bundle, func(name string, b []byte) []byte {
			if name == "blobs/sha256/"+manifest {
				return bytes.Replace(b, []byte(`"schemaVersion":2`), []byte(`"schemaVersion":3`), 1)
			}
			return b
		}), "its content's sha256 is"},
		"removed signature": {rewrite(t, bundle, func(name string, b []byte) []byte {
			if name == "index.json" {
				var idx map[string]any
				require.NoError(t, json.Unmarshal(b, &idx))
				idx["manifests"] = slices.DeleteFunc(idx["manifests"].([]any), func(d any) bool {
					return strings.HasSuffix(d.(map[string]any)["digest"].(string), sig)
				})
				b, _ = json.Marshal(idx)
			}
			return b
		}), "which index.json does not name"},
		"missing manifest": {rewrite(t, bundle, func(name string, b []byte) []byte {
			if name == "blobs/sha256/"+manifest {
				return nil
			}
			return b
		}), "is missing from the archive"},
		"extra file": {rewrite(t, bundle, func(_ string, b []byte) []byte { return b }, "README"), "entry README: an unexpected file"},
	}
}
