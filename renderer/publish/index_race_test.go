package publish

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/store"
)

// racingStore runs after once, right after a version of an index is
// tagged: another writer's write, landing between this writer's write and
// its read-back.
type racingStore struct {
	store.Store
	after func(ctx context.Context, repo store.Repository, version string)
}

func (s *racingStore) Repository(ctx context.Context, name string) (store.Repository, error) {
	r, err := s.Store.Repository(ctx, name)
	if err != nil || !IsIndexRepository(name) {
		return r, err
	}
	return &racingRepo{Repository: r, s: s}, nil
}

type racingRepo struct {
	store.Repository
	s *racingStore
}

func (r *racingRepo) Tag(ctx context.Context, d ocispec.Descriptor, tag string) error {
	if err := r.Repository.Tag(ctx, d, tag); err != nil || tag == IndexTag || r.s.after == nil {
		return err
	}
	after := r.s.after
	r.s.after = nil
	after(ctx, r.Repository, tag)
	return nil
}

// TestUpdateIndexReadsBack: the read-back after the settle is the only
// guard between two writers of one namespace's index (issue 44, W2). A
// writer that read the same index writes over this writer's version, or one
// that read a version since overwritten writes the next: either way this
// writer finds its index no longer the newest, and merges its change into
// the other's. Without the read-back its change is lost.
func TestUpdateIndexReadsBack(t *testing.T) {
	e := Entry{Version: "0.0.1", Digest: digest.FromString("m").String(), Size: 100, Layers: []string{digest.FromString("l").String()}}
	for _, c := range []struct {
		name    string
		version func(mine string) string // the version the other writer writes
	}{
		{"over this writer's version", func(mine string) string { return mine }},
		{"a newer version", func(mine string) string { v, _ := nextVersion(IndexRepository("a"), mine); return v }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			l, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
			require.NoError(t, err)
			defer l.Close()
			merge := func(names ...string) func(*Index) {
				return func(ix *Index) {
					for _, n := range names {
						ix.Merge(map[string]Entry{n: e})
					}
				}
			}
			require.NoError(t, UpdateIndex(ctx, l, "a", merge("a/base"), IndexOptions{}))
			racing := &racingStore{Store: l, after: func(ctx context.Context, repo store.Repository, mine string) {
				theirs := &Index{Schema: indexSchema, Namespace: "a", Version: c.version(mine), Repositories: map[string]Entry{"a/base": e, "a/theirs": e}}
				b, err := encodeIndex(theirs, nil)
				require.NoError(t, err)
				putIndexLayer(t, repo, theirs.Version, b)
			}}
			require.NoError(t, UpdateIndex(ctx, racing, "a", merge("a/mine"), IndexOptions{}))
			assert.Nil(t, racing.after, "the other writer wrote")
			ix, err := ReadIndex(ctx, l, "a", nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"a/base", "a/mine", "a/theirs"}, slices.Sorted(maps.Keys(ix.Repositories)), "neither writer's change is lost")
		})
	}
}
