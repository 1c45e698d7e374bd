package publish

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// TestPushLayoutKeepsATagTakenMeanwhile: another writer who takes a version
// after PushLayout planned it (the tag was free) keeps it: the push fails
// with ErrImmutable instead of moving the tag to the layout's content.
func TestPushLayoutKeepsATagTakenMeanwhile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	publishJobs(t, dir, false, textJob("a/b", "mine"))
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	remote, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "p", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	repo, err := remote.Repository(ctx, "a/b")
	require.NoError(t, err)

	// The check runs between planning and pushing: the other writer's tag
	// lands there.
	_, err = PushLayout(ctx, l, remote, Options{}, func(ctx context.Context, results []Result) error {
		require.Len(t, results, 1)
		assert.Equal(t, Create, results[0].Action)
		other, err := textJob("a/b", "the other writer's").Pack("0.0.1")
		require.NoError(t, err)
		staged, manifest, err := stage(ctx, other)
		require.NoError(t, err)
		return push(ctx, staged, repo, manifest, "0.0.1", false)
	})
	require.ErrorIs(t, err, ErrImmutable)
	assert.Contains(t, err.Error(), "a/b:0.0.1")

	theirs, _, err := Version(ctx, remote, "a/b", "0.0.1")
	require.NoError(t, err)
	mine, _, err := Version(ctx, l, "a/b", "0.0.1")
	require.NoError(t, err)
	assert.NotEqual(t, mine, theirs, "the registry's 0.0.1 is still the other writer's")
}
