package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

func signingKey(t *testing.T) (*sign.Key, *sign.Verifier) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	k, err := sign.NewKey(priv)
	require.NoError(t, err)
	v, err := sign.NewVerifier(k.PublicPEM())
	require.NoError(t, err)
	return k, v
}

func textJob(repo, text string) publish.Job {
	return publish.Job{Repository: repo, Pack: func(version string) (*publish.Artifact, error) {
		return &publish.Artifact{
			Config: publish.NewBlob("application/vnd.example.config.v1+json", []byte(`{"version":"`+version+`"}`)),
			Layers: []publish.Blob{publish.NewBlob("text/plain", []byte(text))},
		}, nil
	}}
}

// signedLayout renders a layout signed with k: a/one, a/two and
// b/bootstrap-x at 0.0.1, the last two alike; with old, a/one is at 0.0.2
// and 0.0.1 stays behind.
func signedLayout(t *testing.T, k *sign.Key, old bool) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	runs := [][]publish.Job{{textJob("a/one", "hello again"), textJob("a/two", "shared"), textJob("b/bootstrap-x", "shared")}}
	if old {
		runs = append([][]publish.Job{{textJob("a/one", "hello")}}, runs...)
	}
	for _, jobs := range runs {
		l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
		require.NoError(t, err)
		_, err = publish.Publish(ctx, l, jobs, publish.Options{SigningKey: k})
		require.NoError(t, err)
		require.NoError(t, l.Save(ctx))
		require.NoError(t, l.Close())
	}
	return dir
}

// export writes the layout in dir to a new archive file and returns it.
func export(t *testing.T, dir string) (string, *Summary) {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true, MustExist: true})
	require.NoError(t, err)
	defer l.Close()
	out := filepath.Join(t.TempDir(), "bundle.tar")
	s, err := WriteFile(ctx, l, out)
	require.NoError(t, err)
	return out, s
}

// contents lists, per newest version of each repository of a store, its
// manifest digest and sorted signature digests.
func contents(t *testing.T, s store.Store, repos []string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	for _, name := range repos {
		repo, err := s.Repository(ctx, name)
		require.NoError(t, err)
		v, err := publish.Newest(ctx, repo)
		require.NoError(t, err)
		desc, err := repo.Resolve(ctx, v)
		require.NoError(t, err)
		refs, err := registry.Referrers(ctx, repo.(content.ReadOnlyGraphStorage), desc, api.MediaTypeSigstoreBundle)
		require.NoError(t, err)
		got := []string{v, desc.Digest.String()}
		for _, r := range refs {
			got = append(got, r.Digest.String())
		}
		slices.Sort(got[2:])
		out[name] = got
	}
	return out
}

var repos = []string{"a/one", "a/two", "b/bootstrap-x"}

// TestExport: the archive holds the newest version of each repository with
// its signatures, each blob once, in fixed entries; the same layout, even
// copied elsewhere, gives the same bytes; the file is 0600; it unpacks into
// a layout with the same versions, digests and signatures.
func TestExport(t *testing.T) {
	k, _ := signingKey(t)
	dir := signedLayout(t, k, true)
	file, s := export(t, dir)
	info, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	assert.Equal(t, info.Size(), s.Size)
	first, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, digest.FromBytes(first).String(), s.SHA256)

	copied := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.CopyFS(copied, os.DirFS(dir)))
	again, _ := export(t, copied)
	second, err := os.ReadFile(again)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(first, second), "the same layout gives the same bytes")

	entries := readEntries(t, first)
	var names []string
	for _, e := range entries {
		names = append(names, e.h.Name)
		assert.Equal(t, time.Unix(0, 0), e.h.ModTime, e.h.Name)
		assert.Zero(t, e.h.Uid+e.h.Gid, e.h.Name)
		assert.Empty(t, e.h.Uname+e.h.Gname, e.h.Name)
	}
	assert.Equal(t, []string{"oci-layout", "index.json", "solar-export.json", "blobs/", "blobs/sha256/"}, names[:5])
	assert.True(t, slices.IsSorted(names[5:]), "blobs sorted")
	// a/one: manifest, config, layer; a/two and b/bootstrap-x: the same
	// manifest, config and layer, once; 3 signatures (one per repository:
	// a bundle names it): manifest and bundle each, the empty config once.
	assert.Len(t, names[5:], 3+3+3+3+1, "each blob once")
	assert.Equal(t, len(names)-5, s.Blobs)

	var m Manifest
	require.NoError(t, json.Unmarshal(entry(t, entries, ExportFile), &m))
	assert.Equal(t, Format, m.Format)
	var index ocispec.Index
	require.NoError(t, json.Unmarshal(entry(t, entries, "index.json"), &index))
	var refs []string
	for _, d := range index.Manifests {
		if ref := d.Annotations[ocispec.AnnotationRefName]; ref != "" {
			refs = append(refs, ref)
		} else {
			assert.Equal(t, api.MediaTypeSigstoreBundle, d.ArtifactType)
		}
	}
	assert.Equal(t, []string{"a/one:0.0.2", "a/two:0.0.1", "b/bootstrap-x:0.0.1"}, refs, "the newest versions only")
	assert.Len(t, index.Manifests, 6, "and one signature each")

	l, err := store.OpenLayout(context.Background(), dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	want := contents(t, l, repos)
	for _, v := range m.Versions {
		assert.Equal(t, want[v.Repository][:2], []string{v.Version, v.Manifest.String()})
		assert.Equal(t, want[v.Repository][2:], []string{v.Signatures[0].String()})
	}
	u, err := Unpack(context.Background(), file, DefaultLimits)
	require.NoError(t, err)
	assert.Equal(t, want, contents(t, u, repos), "unpacked as it was")
	got, err := u.Repositories(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, repos, got)
	require.NoError(t, u.Close())
	_, err = os.Stat(u.tmp.dir)
	assert.True(t, errors.Is(err, os.ErrNotExist), "Close removes the unpacked layout")
}

type tarEntry struct {
	h    *tar.Header
	data []byte
}

func readEntries(t *testing.T, b []byte) []tarEntry {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var out []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, tarEntry{h: h, data: data})
	}
}

func writeEntries(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := *e.h
		h.Size = int64(len(e.data))
		require.NoError(t, tw.WriteHeader(&h))
		_, err := tw.Write(e.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func entry(t *testing.T, entries []tarEntry, name string) []byte {
	t.Helper()
	for _, e := range entries {
		if e.h.Name == name {
			return e.data
		}
	}
	t.Fatalf("no entry %s", name)
	return nil
}
