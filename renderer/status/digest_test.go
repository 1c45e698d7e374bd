package status

import (
	"bytes"
	"context"
	"errors"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"

	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/store"
)

// askedStore is a store of memory repositories that records which
// repositories were asked for; refused ones answer every Resolve with err.
type askedStore struct {
	repos   map[string]*memory.Store
	refused map[string]error
	asked   []string
}

type memoryRepository struct{ *memory.Store }

func (memoryRepository) Tags(context.Context, string, func([]string) error) error { return nil }

type refusedRepository struct {
	memoryRepository
	err error
}

func (r refusedRepository) Resolve(context.Context, string) (ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, r.err
}

func (s *askedStore) Repository(_ context.Context, name string) (store.Repository, error) {
	s.asked = append(s.asked, name)
	if err := s.refused[name]; err != nil {
		return refusedRepository{memoryRepository{memory.New()}, err}, nil
	}
	if r := s.repos[name]; r != nil {
		return memoryRepository{r}, nil
	}
	return memoryRepository{memory.New()}, nil
}

// TestChartDigests: the manifest digest of the release chart a bootstrap
// chart names is read from the store's repository its URL ends with, asked
// once per version, without the registry's prefix; a repository the store
// refuses is an error only when no other suffix resolves.
func TestChartDigests(t *testing.T) {
	ctx := context.Background()
	web := memory.New()
	manifest := []byte(`{"schemaVersion":2}`)
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, manifest)
	require.NoError(t, web.Push(ctx, desc, bytes.NewReader(manifest)))
	require.NoError(t, web.Tag(ctx, desc, "0.0.3"))
	store := &askedStore{repos: map[string]*memory.Store{"alpha/alpha/release-web": web}}
	digests := &chartDigests{store: store, known: map[published.Ref]string{}}
	ref := published.Ref{URL: "oci://registry.example.com/solar/alpha/alpha/release-web", Version: "0.0.3", Release: "alpha/web"}

	d, err := digests.of(ctx, "alpha", ref)
	require.NoError(t, err)
	assert.Equal(t, desc.Digest.String(), d)
	assert.Equal(t, []string{"alpha/alpha/release-web"}, store.asked, "the prefix's longer suffix is not a release chart of alpha")
	d, err = digests.of(ctx, "alpha", published.Ref{URL: ref.URL, Version: ref.Version, Release: "alpha/web"})
	require.NoError(t, err)
	assert.Equal(t, desc.Digest.String(), d)
	assert.Len(t, store.asked, 1, "asked once")

	d, err = digests.of(ctx, "alpha", published.Ref{URL: ref.URL, Version: "0.0.4"})
	require.NoError(t, err)
	assert.Empty(t, d, "a version the store does not have")

	// A prefix shaped like a Target namespace: its suffix is asked too, and
	// refused, and the right one still found.
	store.refused = map[string]error{"alpha/alpha/alpha/release-web": errors.New("denied: requested access to the resource is denied")}
	store.asked = nil
	d, err = digests.of(ctx, "alpha", published.Ref{URL: "oci://registry.example.com/alpha/alpha/alpha/release-web", Version: "0.0.3"})
	require.NoError(t, err)
	assert.Equal(t, desc.Digest.String(), d)
	assert.Equal(t, []string{"alpha/alpha/alpha/release-web", "alpha/alpha/release-web"}, store.asked)

	store.refused["alpha/alpha/release-web"] = errors.New("denied: requested access to the resource is denied")
	_, err = digests.of(ctx, "alpha", published.Ref{URL: "oci://registry.example.com/solar/alpha/alpha/release-web", Version: "0.0.5"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading alpha/alpha/release-web:0.0.5: denied")
}
