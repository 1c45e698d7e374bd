package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/device/wire"
)

// TestAttemptArtifactIsORASs: the attempt's artifact, as wire builds it
// (and PackAttempt pushes it, and a device checks it, without ORAS), is
// byte for byte what oras.PackManifest made of it before: the digests that
// bindings already in buckets name still hold. With and without the
// optional fields.
func TestAttemptArtifactIsORASs(t *testing.T) {
	ctx := context.Background()
	a, _ := attempt(t, "dev-1", 3)
	b := a
	b.PreviousVersion, b.NotAfter = "1.2.0", "2027-01-31T00:00:00Z"
	b, err := b.Seal()
	require.NoError(t, err)
	for _, x := range []wire.Attempt{a, b} {
		// What PackAttempt did with ORAS.
		store := memory.New()
		layerJSON, err := json.Marshal(x)
		require.NoError(t, err)
		layer := content.NewDescriptorFromBytes(api.MediaTypeAttempt, layerJSON)
		require.NoError(t, store.Push(ctx, layer, bytes.NewReader(layerJSON)))
		want, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, api.ArtifactTypeAttempt,
			oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}, ManifestAnnotations: map[string]string{
				ocispec.AnnotationCreated: time.Unix(0, 0).UTC().Format(time.RFC3339), api.AnnotationDeviceID: x.DeviceID}})
		require.NoError(t, err)
		wantBytes, err := content.FetchAll(ctx, store, want)
		require.NoError(t, err)

		manifest, _, _, digest, err := wire.AttemptArtifact(x)
		require.NoError(t, err)
		assert.Equal(t, string(wantBytes), string(manifest))
		assert.Equal(t, want.Digest.String(), digest)
		p, err := PackAttempt(x)
		require.NoError(t, err)
		assert.Equal(t, want.Digest, p.Root.Digest, "PackAttempt pushes the same")
	}
}

// attempt is a sealed attempt for device with the n-th binary.
func attempt(t *testing.T, device string, n int) (wire.Attempt, string) {
	t.Helper()
	digest := fmt.Sprintf("sha256:%064x", n)
	a, err := wire.Attempt{DeviceID: device, TargetVersion: fmt.Sprintf("1.%d.0", n),
		Artifact: wire.Artifact{URL: "https://registry.example.com/v2/fleet/agent/blobs/" + digest, Digest: digest, Size: 1000 + int64(n), Platform: "linux/arm64"}}.Seal()
	require.NoError(t, err)
	// The digest of the attempt's own artifact stands in for PackAttempt's.
	return a, fmt.Sprintf("sha256:%064x", 1<<20+n)
}
