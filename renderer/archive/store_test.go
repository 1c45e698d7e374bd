package archive

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// TestPushUnpackedIntoALayout: an unpacked archive is a store PushLayout
// pushes from as from the layout it was exported from, signatures checked
// and carried (here into a new layout: no registry, so it runs under
// -short); it is read-only, and a repository it lacks is empty.
func TestPushUnpackedIntoALayout(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ctx := context.Background()
	k, v := signingKey(t)
	src := signedLayout(t, k, false)
	file, _ := export(t, src)
	u, err := Unpack(ctx, file, DefaultLimits)
	require.NoError(t, err)
	defer u.Close()

	dst, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "site"), store.LayoutOptions{})
	require.NoError(t, err)
	defer dst.Close()
	_, other := signingKey(t)
	_, err = publish.PushLayout(ctx, u, dst, publish.Options{Verifier: other}, nil)
	require.ErrorIs(t, err, publish.ErrSignature)
	results, err := publish.PushLayout(ctx, u, dst, publish.Options{Verifier: v}, nil)
	require.NoError(t, err)
	require.Len(t, results, 3)
	for _, r := range results {
		assert.Equal(t, publish.Create, r.Action, r.Repository)
	}
	require.NoError(t, dst.Save(ctx))
	l, err := store.OpenLayout(ctx, src, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, contents(t, l, repos), contents(t, dst, repos), "the site holds what the layout held, signatures too")
	results, err = publish.PushLayout(ctx, u, dst, publish.Options{Verifier: v}, nil)
	require.NoError(t, err)
	for _, r := range results {
		assert.Equal(t, publish.Unchanged, r.Action, r.Repository)
	}

	repo, err := u.Repository(ctx, "a/one")
	require.NoError(t, err)
	desc, err := repo.Resolve(ctx, "0.0.1")
	require.NoError(t, err)
	assert.True(t, errors.Is(repo.Tag(ctx, desc, "0.0.2"), errReadOnly))
	none, err := u.Repository(ctx, "c/none")
	require.NoError(t, err)
	tags, err := store.Tags(ctx, none)
	require.NoError(t, err)
	assert.Empty(t, tags)
	ok, err := none.Exists(ctx, desc)
	require.NoError(t, err)
	assert.False(t, ok, "a repository answers only for its own blobs")
}
