package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// TestPackAgentIsORASs: PackAgent, which packs bytes alone, makes of each
// binary the manifest oras.PackManifest made of it before (the digests of
// agents already pushed still hold), and every node it names is among its
// blobs.
func TestPackAgentIsORASs(t *testing.T) {
	ctx := context.Background()
	bins := []Binary{{Platform: "linux/arm/v7", Name: "agent-armv7", Data: []byte("arm")},
		{Platform: "linux/amd64", Name: "agent-amd64", Data: []byte("amd")}}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p, err := PackAgent("1.4.0", bins, created)
	require.NoError(t, err)
	blobs := map[digest.Digest][]byte{}
	for _, b := range p.Blobs {
		blobs[b.Descriptor.Digest] = b.Data
	}
	var index ocispec.Index
	require.NoError(t, json.Unmarshal(blobs[p.Root.Digest], &index))
	require.Len(t, index.Manifests, 2)
	for i, b := range []Binary{bins[1], bins[0]} { // by platform
		// What PackAgent did with ORAS.
		store := memory.New()
		layer := content.NewDescriptorFromBytes(api.MediaTypeAgentBinary, b.Data)
		layer.Annotations = map[string]string{ocispec.AnnotationTitle: b.Name}
		platform, err := ParsePlatform(b.Platform)
		require.NoError(t, err)
		config, err := json.Marshal(ocispec.Image{Platform: platform, RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{}}})
		require.NoError(t, err)
		configDesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, config)
		require.NoError(t, store.Push(ctx, configDesc, bytes.NewReader(config)))
		want, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, api.ArtifactTypeAgent,
			oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}, ConfigDescriptor: &configDesc,
				ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: publish.Created(created)}})
		require.NoError(t, err)
		want.Platform = &platform
		assert.Equal(t, want, index.Manifests[i])
		wantBytes, err := content.FetchAll(ctx, store, want)
		require.NoError(t, err)
		assert.Equal(t, string(wantBytes), string(blobs[want.Digest]))
		assert.Equal(t, b.Data, blobs[layer.Digest])
		assert.Equal(t, config, blobs[configDesc.Digest])
		assert.Equal(t, layer, p.Layers[b.Platform])
	}
	assert.Len(t, p.Blobs, 7, "2 binaries, 2 configs, 2 manifests, the index")
}
