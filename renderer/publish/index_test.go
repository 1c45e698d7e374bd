package publish

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// countingStore counts the repositories a publish opens.
type countingStore struct {
	store.Store
	opened []string
}

func (c *countingStore) Repository(ctx context.Context, name string) (store.Repository, error) {
	c.opened = append(c.opened, name)
	return c.Store.Repository(ctx, name)
}

// TestIndexSettlesWithoutAsking: a job whose index entry holds what it
// gives is unchanged without opening its repository; a changed job, one
// without an entry, and one whose entry lacks the signature a signing run
// wants go the full way, after BeforePush names them.
func TestIndexSettlesWithoutAsking(t *testing.T) {
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	first, err := Publish(ctx, l, []Job{textJob("a/one", "hello"), textJob("a/two", "world")}, Options{})
	require.NoError(t, err)
	entries := IndexEntries(first)
	require.Len(t, entries, 2)
	assert.Equal(t, "0.0.1", entries["a/one"].Version)

	store := &countingStore{Store: l}
	var before []string
	opts := Options{Index: entries, BeforePush: func(_ context.Context, repos []string) error { before = repos; return nil }}
	results, err := Publish(ctx, store, []Job{textJob("a/one", "hello"), textJob("a/two", "world!"), textJob("a/three", "new")}, opts)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/one 0.0.1 unchanged", "a/two 0.0.2 update", "a/three 0.0.1 create"}, summary(results))
	assert.Equal(t, first[0].Digest, results[0].Digest, "the index's digest")
	assert.Equal(t, []string{"a/two", "a/three"}, before, "what the index does not settle, before any push")
	assert.NotContains(t, store.opened, "a/one", "the settled repository is not asked")
	assert.Empty(t, IndexEntries(results[:1]), "what the index gave is not written back")

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key, err := sign.NewKey(priv)
	require.NoError(t, err)
	store.opened = nil
	results, err = Publish(ctx, store, []Job{textJob("a/one", "hello")}, Options{Index: entries, SigningKey: key})
	require.NoError(t, err)
	assert.Equal(t, Create, results[0].SignatureAction, "an entry without a signature: asked, and signed")
	assert.Contains(t, store.opened, "a/one")
}

func summary(results []Result) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.Repository+" "+r.Version+" "+r.Action)
	}
	return out
}

// TestIndexMergeKeepsHigherVersions: a writer's entries never replace one
// naming a higher version (another writer's, merged since); an entry without
// a signature keeps the signature of the same manifest; Remove and Merge give
// the same index applied twice.
func TestIndexMergeKeepsHigherVersions(t *testing.T) {
	ix := &Index{Schema: indexSchema, Namespace: "a", Repositories: map[string]Entry{
		"a/one": {Version: "0.0.10", Digest: "sha256:new"},
		"a/two": {Version: "0.0.2", Digest: "sha256:two", Signature: "sha256:sig"},
	}}
	mine := map[string]Entry{
		"a/one":   {Version: "0.0.9", Digest: "sha256:old"},
		"a/two":   {Version: "0.0.2", Digest: "sha256:two"},
		"a/three": {Version: "0.0.1", Digest: "sha256:three"},
	}
	ix.Merge(mine)
	again := ix.clone()
	again.Merge(mine)
	assert.True(t, again.equal(ix), "merging twice changes nothing")
	assert.Equal(t, "0.0.10", ix.Repositories["a/one"].Version, "semver, not text: 0.0.10 is higher")
	assert.Equal(t, "sha256:sig", ix.Repositories["a/two"].Signature)
	assert.Equal(t, "0.0.1", ix.Repositories["a/three"].Version)
	ix.Remove([]string{"a/three", "a/absent"})
	assert.NotContains(t, ix.Repositories, "a/three")
}

// TestIndexReadWrite: an index written into a layout reads back; one read
// with a verifier must be signed with its key; another namespace's index is
// ErrIndex; UpdateIndex writes nothing that changes nothing, and no empty
// index where there was none.
func TestIndexReadWrite(t *testing.T) {
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	got, err := ReadIndex(ctx, l, "a", nil)
	require.NoError(t, err)
	assert.Nil(t, got, "none yet")
	require.NoError(t, UpdateIndex(ctx, l, "a", func(ix *Index) { ix.Remove([]string{"a/x"}) }, IndexOptions{}))
	repos, err := l.Repositories(ctx, "a/")
	require.NoError(t, err)
	assert.Empty(t, repos, "no empty index where there was none")

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key, err := sign.NewKey(priv)
	require.NoError(t, err)
	e := Entry{Version: "0.0.1", Digest: digest.FromString("m").String(), Size: 100, Layers: []string{digest.FromString("l").String()}}
	require.NoError(t, UpdateIndex(ctx, l, "a", func(ix *Index) { ix.Merge(map[string]Entry{"a/x": e}) }, IndexOptions{SigningKey: key}))
	v, err := IndexVerifier(key)
	require.NoError(t, err)
	got, err = ReadIndex(ctx, l, "a", v)
	require.NoError(t, err)
	assert.Equal(t, map[string]Entry{"a/x": e}, got.Repositories)

	_, other, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	otherKey, err := sign.NewKey(other)
	require.NoError(t, err)
	ov, err := IndexVerifier(otherKey)
	require.NoError(t, err)
	_, err = ReadIndex(ctx, l, "a", ov)
	assert.ErrorIs(t, err, ErrIndex, "signed with another key")

	repo, err := l.Repository(ctx, IndexRepository("a"))
	require.NoError(t, err)
	before, err := repo.Resolve(ctx, IndexTag)
	require.NoError(t, err)
	require.NoError(t, UpdateIndex(ctx, l, "a", func(ix *Index) { ix.Merge(map[string]Entry{"a/x": e}) }, IndexOptions{SigningKey: key}))
	after, err := repo.Resolve(ctx, IndexTag)
	require.NoError(t, err)
	assert.Equal(t, before.Digest, after.Digest, "nothing changed, nothing written")

	// What a writer without the key may put there is not used: another
	// namespace's index, an entry for another namespace's repository, a
	// version that is none, an older index under a newer version.
	for _, hostile := range []*Index{
		{Schema: indexSchema, Namespace: "b", Repositories: map[string]Entry{}},
		{Schema: indexSchema, Namespace: "a", Repositories: map[string]Entry{"b/x": e}},
		{Schema: indexSchema, Namespace: "a", Repositories: map[string]Entry{"a/x": {Version: "x", Digest: e.Digest, Size: 1, Layers: e.Layers}}},
		{Schema: indexSchema, Namespace: "a", Version: "0.0.1", Repositories: map[string]Entry{}},
	} {
		putIndex(t, repo, hostile)
		_, err = ReadIndex(ctx, l, "a", nil)
		assert.ErrorIs(t, err, ErrIndex, "%+v", hostile)
	}
	// UpdateIndex replaces such an index, even with an empty one.
	require.NoError(t, UpdateIndex(ctx, l, "a", func(ix *Index) { ix.Remove([]string{"a/x"}) }, IndexOptions{}))
	got, err = ReadIndex(ctx, l, "a", nil)
	require.NoError(t, err)
	assert.Empty(t, got.Repositories)
}

// putIndex writes ix into repo as its next version, as a writer without
// the key may: its own version is the next one unless ix names one.
func putIndex(t *testing.T, repo store.Repository, ix *Index) {
	t.Helper()
	ctx := context.Background()
	newest, err := Newest(ctx, repo)
	require.NoError(t, err)
	next, err := nextVersion(IndexRepository("a"), newest)
	require.NoError(t, err)
	c := ix.clone()
	if c.Version == "" {
		c.Version = next
	}
	b, err := encodeIndex(c, nil)
	require.NoError(t, err)
	putIndexLayer(t, repo, next, b)
}

// putIndexLayer writes an index manifest of one layer, b, under tag.
func putIndexLayer(t *testing.T, repo store.Repository, tag string, b []byte) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	art := &Artifact{ArtifactType: api.ArtifactTypeIndex, Config: NewBlob(ocispec.MediaTypeEmptyJSON, []byte("{}")),
		Layers: []Blob{NewBlob(api.MediaTypeIndex, b)}}
	staged, manifest, err := stage(ctx, art)
	require.NoError(t, err)
	raw, err := upload(ctx, staged, repo, manifest, true)
	require.NoError(t, err)
	require.NoError(t, tagManifest(ctx, repo, manifest, raw, tag))
	return manifest
}
