package publish

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/store"
)

// TestPackCache: an unchanged job with a Key is compared without packing once
// the cache knows its layers at the latest version; the store decides what is
// latest, so content another writer published is never taken for ours.
func TestPackCache(t *testing.T) {
	ctx := context.Background()
	dir, cacheDir := filepath.Join(t.TempDir(), "out"), t.TempDir()
	packs := 0
	job := func(text string) Job {
		j := textJob("a/one", text)
		pack := j.Pack
		j.Key, j.Pack = func() string { return "key-of-" + text }, func(version string) (*Artifact, error) {
			packs++
			return pack(version)
		}
		return j
	}
	run := func(j Job) string {
		t.Helper()
		l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
		require.NoError(t, err)
		defer l.Close()
		cache := OpenPackCache(cacheDir)
		results, err := Publish(ctx, l, []Job{j}, Options{PackCache: cache})
		require.NoError(t, err)
		require.NoError(t, l.Save(ctx))
		cache.Save()
		return results[0].Version + " " + results[0].Action
	}

	assert.Equal(t, "0.0.1 create", run(job("hello")))
	packs = 0
	assert.Equal(t, "0.0.1 unchanged", run(job("hello")))
	assert.Zero(t, packs, "the cache knew the layers of this content at 0.0.1")

	// Another writer publishes other content: 0.0.2. Ours is compared with
	// it, packed at 0.0.2, and published again.
	assert.Equal(t, "0.0.2 update", run(textJob("a/one", "other")))
	packs = 0
	assert.Equal(t, "0.0.3 update", run(job("hello")))
	assert.Equal(t, 2, packs, "packed at 0.0.2 to compare, at 0.0.3 to push")
	packs = 0
	assert.Equal(t, "0.0.3 unchanged", run(job("hello")))
	assert.Zero(t, packs)

	// A job without a key is always packed.
	j := job("hello")
	j.Key = nil
	packs = 0
	assert.Equal(t, "0.0.3 unchanged", run(j))
	assert.Equal(t, 1, packs)
}
