package publish

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// rivalStore is a store where another writer, with a key of its own,
// writes its index of namespace "a" (the next version) right after each
// write of this one, before this one reads its write back: two publishers
// with different keys (a key rotation) in step.
type rivalStore struct {
	store.Store
	key    *sign.Key
	writes int
}

func (s *rivalStore) Repository(ctx context.Context, name string) (store.Repository, error) {
	r, err := s.Store.Repository(ctx, name)
	if err != nil || name != IndexRepository("a") {
		return r, err
	}
	return rivalRepo{Repository: r, s: s}, nil
}

// rivalRepo hides what else the repository offers (its writes go through
// Tag).
type rivalRepo struct {
	store.Repository
	s *rivalStore
}

func (r rivalRepo) Tag(ctx context.Context, desc ocispec.Descriptor, tag string) error {
	if err := r.Repository.Tag(ctx, desc, tag); err != nil || tag != IndexTag {
		return err // a write ends with its IndexTag
	}
	r.s.writes++
	tags, err := store.Tags(ctx, r.Repository)
	if err != nil {
		return err
	}
	next, err := nextVersion(IndexRepository("a"), newestTag(tags))
	if err != nil {
		return err
	}
	e := Entry{Version: "0.0.1", Digest: digest.FromString("theirs").String(), Size: 100, Layers: []string{digest.FromString("l").String()}}
	_, err = writeIndex(ctx, r.Repository, &Index{Schema: indexSchema, Namespace: "a", Version: next, Repositories: map[string]Entry{"a/theirs": e}}, r.s.key)
	return err
}

// TestIndexKeyRotationRace (K1): two publishers with different keys write
// a namespace's index at once. Each finds the other's unusable (not
// signed with its key); each used to replace it again, until one failed
// its run ("another writer replaced it 5 times in a row"). A writer that
// finds its write replaced by an index it cannot use now leaves it: both
// runs succeed, the last written index stands, and the next run of the
// other key (which cannot trust it) asks its repositories. An index of
// another key found at the start is still replaced: the new key takes
// over.
func TestIndexKeyRotationRace(t *testing.T) {
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	oldKey, oldV := signingKey(t)
	newKey, newV := signingKey(t)
	e := Entry{Version: "0.0.1", Digest: digest.FromString("mine").String(), Size: 100, Layers: []string{digest.FromString("l").String()}}
	mine := func(ix *Index) { ix.Merge(map[string]Entry{"a/mine": e}) }

	rival := &rivalStore{Store: l, key: oldKey}
	var logs bytes.Buffer
	err = UpdateIndex(ctx, rival, "a", mine, IndexOptions{SigningKey: newKey, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err, "the run does not fail on the other key's index")
	assert.Equal(t, 1, rival.writes, "written once, then left to the other writer")
	assert.Contains(t, logs.String(), "another writer, with another key, replaced the namespace's index")
	got, err := ReadIndex(ctx, l, "a", oldV)
	require.NoError(t, err, "the other key's index stands")
	assert.Contains(t, got.Repositories, "a/theirs")
	_, err = ReadIndex(ctx, l, "a", newV)
	assert.ErrorIs(t, err, ErrIndex, "and the new key does not trust it")

	// Alone, the new key replaces the old key's index.
	require.NoError(t, UpdateIndex(ctx, l, "a", mine, IndexOptions{SigningKey: newKey}))
	got, err = ReadIndex(ctx, l, "a", newV)
	require.NoError(t, err)
	assert.Equal(t, map[string]Entry{"a/mine": e}, got.Repositories)
}
