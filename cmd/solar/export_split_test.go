package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/store"
)

// addBig adds to the layout dir a repository x/big at 0.0.1 with a layer
// of size random bytes: an archive of the layout of several MiB.
func addBig(t *testing.T, dir string, size int) {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{MustExist: true})
	require.NoError(t, err)
	defer l.Close()
	repo, err := l.Repository(ctx, "x/big")
	require.NoError(t, err)
	push := func(mediaType string, b []byte) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
		require.NoError(t, repo.Push(ctx, d, bytes.NewReader(b)))
		return d
	}
	layer := make([]byte, size)
	_, err = rand.Read(layer)
	require.NoError(t, err)
	raw, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: push("application/vnd.example.config.v1+json", []byte(`{}`)),
		Layers: []ocispec.Descriptor{push("application/octet-stream", layer)}})
	require.NoError(t, err)
	require.NoError(t, repo.Tag(ctx, push(ocispec.MediaTypeImageManifest, raw), "0.0.1"))
	require.NoError(t, l.Save(ctx))
}

// TestExportSplitPush (issue 52, done when 2): export --split 1MiB of a
// layout of more than 3 MiB writes parts of at most 1 MiB that together
// are the archive export writes whole, and their list; push of the list
// with a part damaged (one byte) or missing exits 1 naming the part and
// writes nothing to the registry; push of the intact list puts there what
// the layout holds, so that pushing the whole archive after it writes
// nothing.
func TestExportSplitPush(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	login := []string{"--registry", proxy.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(reg.Password), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code, _, stderr := cli(append([]string{"render", "--no-credentials", "-q", "--out", out, "../../examples"}, login...)...)
	require.Equal(t, 0, code, stderr)
	addBig(t, out, 3<<20+200<<10)

	whole := filepath.Join(dir, "whole.tar")
	code, _, stderr = cli("export", out, "--out", whole)
	require.Equal(t, 0, code, stderr)
	bundle := filepath.Join(dir, "media", "bundle.tar")
	require.NoError(t, os.Mkdir(filepath.Dir(bundle), 0o700))
	code, stdout, stderr := cli("export", out, "--out", bundle, "--split", "1MiB", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var s struct {
		archive.Summary
		List  string         `json:"list"`
		Parts []archive.Part `json:"parts"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &s), stdout)
	require.Len(t, s.Parts, 4)
	assert.Equal(t, bundle+".sha256", s.List)
	var joined []byte
	for _, p := range s.Parts {
		assert.LessOrEqual(t, p.Size, int64(1<<20), p.Name)
		joined = append(joined, splitReadFile(t, p.Name)...)
	}
	assert.True(t, bytes.Equal(splitReadFile(t, whole), joined), "the parts are the archive export writes whole")
	assert.Equal(t, digest.FromBytes(joined).String(), s.SHA256)
	_, err := os.Stat(bundle)
	assert.ErrorIs(t, err, os.ErrNotExist, "the whole is not written beside its parts")

	damaged := func(name string, change func(string)) string {
		t.Helper()
		d := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.CopyFS(d, os.DirFS(filepath.Dir(bundle))))
		change(filepath.Join(d, "bundle.tar"))
		return filepath.Join(d, "bundle.tar.sha256")
	}
	cases := map[string]struct{ list, want string }{
		"flipped byte": {damaged("flipped", func(b string) {
			p := splitReadFile(t, b+".002")
			p[12345] ^= 1
			require.NoError(t, os.WriteFile(b+".002", p, 0o600))
		}), "bundle.tar.002: its sha256 is"},
		"missing part": {damaged("missing", func(b string) { require.NoError(t, os.Remove(b+".003")) }), "bundle.tar.003 is missing"},
	}
	proxy.Take()
	for what, c := range cases {
		code, _, stderr = cli(append([]string{"push", c.list}, login...)...)
		assert.Equal(t, 1, code, what)
		assert.Contains(t, stderr, "archive refused, nothing pushed", what)
		assert.Contains(t, stderr, c.want, what)
	}
	code, _, stderr = cli(append([]string{"push", s.Parts[0].Name}, login...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "is one part of a split archive: push "+bundle+".sha256")
	assert.Zero(t, countproxy.Writes(proxy.Take()), "a refused set writes nothing")

	code, stdout, stderr = cli(append([]string{"push", s.List}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.True(t, hasRow(stdout, "x/big", "0.0.1", "create"), stdout)
	l, err := store.OpenLayout(context.Background(), out, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	repos, err := l.Repositories(context.Background(), "")
	require.NoError(t, err)
	remote, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	assert.Equal(t, storeContents(t, l, repos), storeContents(t, remote, repos), "the registry holds what the layout held")
	proxy.Take()
	code, stdout, stderr = cli(append([]string{"push", whole}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, "create")
	assert.Zero(t, countproxy.Writes(proxy.Take()), "the whole pushes nothing the parts did not")
}

func splitReadFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}
