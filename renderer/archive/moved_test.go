package archive

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// retag renames version from ("repo:version") to to in index.json and
// solar-export.json, keeping its manifest and signatures: what someone
// without the key can do to an archive.
func retag(t *testing.T, entries []tarEntry, from, to string) []tarEntry {
	t.Helper()
	var index ocispec.Index
	require.NoError(t, json.Unmarshal(entry(t, entries, "index.json"), &index))
	found := false
	for i, d := range index.Manifests {
		if d.Annotations[ocispec.AnnotationRefName] == from {
			index.Manifests[i].Annotations = map[string]string{ocispec.AnnotationRefName: to}
			found = true
		}
	}
	require.True(t, found, from)
	var m Manifest
	require.NoError(t, json.Unmarshal(entry(t, entries, ExportFile), &m))
	for i, v := range m.Versions {
		if v.Repository+":"+v.Version == from {
			m.Versions[i].Repository, m.Versions[i].Version = splitRef(to)
		}
	}
	setJSON(t, entries, "index.json", index)
	setJSON(t, entries, ExportFile, m)
	return entries
}

func splitRef(ref string) (string, string) {
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == ':' {
			return ref[:i], ref[i+1:]
		}
	}
	return ref, ""
}

// TestPushRefusesMovedSignature (S1, push --key of an archive): a signed
// chart renamed in the archive, to another Target's repository (a
// transplant) or to a version above the registry's newest (a rollback to
// old content), keeps a signature that verifies its digest; push --key
// refuses both, naming what the signature was made for, and writes
// nothing.
func TestPushRefusesMovedSignature(t *testing.T) {
	ctx := context.Background()
	k, v := signingKey(t)
	file, _ := export(t, signedLayout(t, k, false))
	good, err := os.ReadFile(file)
	require.NoError(t, err)

	// Where the rollback goes: a/one at 0.0.1 (the archive's a/one) and
	// 0.0.2, signed. A layout stands in for the registry: the check comes
	// before any write.
	rolled := filepath.Join(t.TempDir(), "rolled")
	for _, text := range []string{"hello again", "newer"} {
		l, err := store.OpenLayout(ctx, rolled, store.LayoutOptions{})
		require.NoError(t, err)
		_, err = publish.Publish(ctx, l, []publish.Job{textJob("a/one", text)}, publish.Options{SigningKey: k})
		require.NoError(t, err)
		require.NoError(t, l.Save(ctx))
		require.NoError(t, l.Close())
	}

	cases := map[string]struct{ dst, from, to, want string }{
		"transplanted": {filepath.Join(t.TempDir(), "empty"), "b/bootstrap-x:0.0.1", "b/bootstrap-y:0.0.1",
			"b/bootstrap-y:0.0.1: no signature verifies with the keys given: signed for another repository or version: b/bootstrap-x:0.0.1"},
		"rolled back": {rolled, "a/one:0.0.1", "a/one:0.0.3",
			"a/one:0.0.3: no signature verifies with the keys given: signed for another repository or version: a/one:0.0.1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			crafted := filepath.Join(t.TempDir(), "crafted.tar")
			require.NoError(t, os.WriteFile(crafted, writeEntries(t, retag(t, readEntries(t, good), c.from, c.to)), 0o600))
			u, err := Unpack(ctx, crafted, DefaultLimits)
			require.NoError(t, err, "the archive itself is whole")
			defer u.Close()
			l, err := store.OpenLayout(ctx, c.dst, store.LayoutOptions{})
			require.NoError(t, err)
			defer l.Close()
			before, err := l.Repositories(ctx, "")
			require.NoError(t, err)
			_, err = publish.PushLayout(ctx, u, l, publish.Options{Verifier: v}, nil)
			require.ErrorIs(t, err, publish.ErrSignature)
			assert.Contains(t, err.Error(), c.want)
			after, err := l.Repositories(ctx, "")
			require.NoError(t, err)
			assert.Equal(t, before, after, "nothing pushed")
			if name == "rolled back" {
				r, err := l.Repository(ctx, "a/one")
				require.NoError(t, err)
				newest, err := publish.Newest(ctx, r)
				require.NoError(t, err)
				assert.Equal(t, "0.0.2", newest, "nothing pushed")
			}
		})
	}

	// The archive as exported pushes: each version is signed as what it is.
	u, err := Unpack(ctx, file, DefaultLimits)
	require.NoError(t, err)
	defer u.Close()
	fresh, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "fresh"), store.LayoutOptions{})
	require.NoError(t, err)
	defer fresh.Close()
	_, err = publish.PushLayout(ctx, u, fresh, publish.Options{Verifier: v}, nil)
	require.NoError(t, err)
	for _, repo := range repos {
		r, err := fresh.Repository(ctx, repo)
		require.NoError(t, err)
		desc, err := r.Resolve(ctx, "0.0.1")
		require.NoError(t, err)
		assert.NoError(t, v.Check(ctx, r.(sign.Target), sign.Subject{Repository: repo, Version: "0.0.1", Manifest: desc}), repo)
	}
}
