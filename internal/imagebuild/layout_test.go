package imagebuild_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/imagebuild"
)

// The layout holds the index under its version and, per platform, the SBOM
// as a referrer of that platform's image.
func TestWriteLayout(t *testing.T) {
	res := build(t, writeHello(t, "hello"), "UTC")
	dir := filepath.Join(t.TempDir(), "hello")
	desc, err := imagebuild.WriteLayout(dir, "1.2.3", res)
	require.NoError(t, err)
	want, err := res.Index.Digest()
	require.NoError(t, err)
	assert.Equal(t, want, desc.Digest)

	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	im, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 3)
	assert.Equal(t, want, im.Manifests[0].Digest)
	assert.Equal(t, "1.2.3", im.Manifests[0].Annotations[ocispec.AnnotationRefName])
	idx, err := top.ImageIndex(want)
	require.NoError(t, err)
	require.NoError(t, validate.Index(idx))

	for i, img := range res.Images {
		ref := im.Manifests[1+i]
		assert.Equal(t, api.MediaTypeSBOM, ref.ArtifactType)
		raw, err := p.Bytes(ref.Digest)
		require.NoError(t, err)
		var m ocispec.Manifest
		require.NoError(t, json.Unmarshal(raw, &m))
		d, err := img.Image.Digest()
		require.NoError(t, err)
		require.NotNil(t, m.Subject)
		assert.Equal(t, d.String(), m.Subject.Digest.String())
		require.Len(t, m.Layers, 1)
		sbom, err := p.Bytes(mustHash(t, m.Layers[0].Digest.String()))
		require.NoError(t, err)
		assert.Equal(t, string(img.SBOM), string(sbom))
	}
}

func mustHash(t *testing.T, s string) v1.Hash {
	t.Helper()
	h, err := v1.NewHash(s)
	require.NoError(t, err)
	return h
}
