package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
)

// TestLayoutViewAnswersAsOras: the view a run reads an unchanged repository
// through answers as oras' own store of the same layout does: tags, each tag
// and manifest digest resolved, blobs fetched, missing ones not found.
func TestLayoutViewAnswersAsOras(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	putTexts(t, dir, "a/b", "one", "two", "three")
	repo := filepath.Join(dir, "a", "b")
	index, err := checkRepoLayout(repo)
	require.NoError(t, err)
	view := newLayoutView(repo, index)
	store, err := oci.NewFromFS(ctx, os.DirFS(repo))
	require.NoError(t, err)

	var viewTags, orasTags []string
	require.NoError(t, view.Tags(ctx, "", func(tags []string) error { viewTags = tags; return nil }))
	require.NoError(t, store.Tags(ctx, "", func(tags []string) error { orasTags = tags; return nil }))
	assert.Equal(t, []string{"0.0.1", "0.0.2", "0.0.3"}, viewTags)
	assert.Equal(t, orasTags, viewTags)
	require.NoError(t, view.Tags(ctx, "0.0.1", func(tags []string) error { viewTags = tags; return nil }))
	assert.Equal(t, []string{"0.0.2", "0.0.3"}, viewTags)

	for _, tag := range orasTags {
		want, err := store.Resolve(ctx, tag)
		require.NoError(t, err)
		for _, ref := range []string{tag, want.Digest.String()} {
			got, err := view.Resolve(ctx, ref)
			require.NoError(t, err)
			assert.Equal(t, want.Digest, got.Digest, ref)
			assert.Equal(t, want.Size, got.Size, ref)
		}
		fromView, err := content.FetchAll(ctx, view, want)
		require.NoError(t, err)
		fromOras, err := content.FetchAll(ctx, store, want)
		require.NoError(t, err)
		assert.Equal(t, fromOras, fromView)
		ok, err := view.Exists(ctx, want)
		require.NoError(t, err)
		assert.True(t, ok)
	}

	missing := ocispec.Descriptor{MediaType: "text/plain", Digest: digest.FromString("missing"), Size: 7}
	ok, err := view.Exists(ctx, missing)
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = view.Fetch(ctx, missing)
	assert.True(t, IsNotFound(err), "%v", err)
	_, err = view.Resolve(ctx, "0.0.4")
	assert.True(t, IsNotFound(err), "%v", err)
	_, err = view.Fetch(ctx, ocispec.Descriptor{Digest: "sha256:../../index.json"})
	assert.Error(t, err, "a digest that is no digest names no file")
}
