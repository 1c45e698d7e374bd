package sign

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/solar-pipeline/solar/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
)

// edge1 is edge-1's bootstrap chart, version 0.0.1, as signed.
func edge1(d digest.Digest) Subject {
	return Subject{Repository: "alpha/bootstrap-edge-1", Version: "0.0.1",
		Manifest: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: 5}}
}

// TestSignatureBindsRepositoryAndVersion (S1): a signature names the
// repository and the version it was made for. The same manifest found as
// another Target's chart (a transplant) or under a newer version (a
// rollback) is refused with ErrElsewhere; a signature of an older solar,
// which names neither, with ErrUnbound. Flux and cosign check the key and
// the digest only: for them each of these verifies.
func TestSignatureBindsRepositoryAndVersion(t *testing.T) {
	k := newKey(t)
	v, err := NewVerifier(k.PublicPEM())
	require.NoError(t, err)
	signed := edge1(digest.FromString("edge-1's bootstrap chart"))
	b, err := k.SubjectBundle(signed)
	require.NoError(t, err)
	require.NoError(t, v.VerifySubject(b, signed))

	transplant, sameVersion, rollback := signed, signed, signed
	transplant.Repository, transplant.Version = "alpha/bootstrap-edge-2", "0.0.2"
	sameVersion.Repository = "alpha/bootstrap-edge-2"
	rollback.Version = "0.0.3"
	for name, s := range map[string]Subject{"transplanted": transplant, "transplanted at its version": sameVersion, "rolled back": rollback} {
		err := v.VerifySubject(b, s)
		require.ErrorIs(t, err, ErrBadSignature, name)
		require.ErrorIs(t, err, ErrElsewhere, name)
		assert.Contains(t, err.Error(), "signed for another repository or version: alpha/bootstrap-edge-1:0.0.1", name)
		assert.NoError(t, v.VerifyBundle(b, s.Manifest), "%s: key and digest hold, all Flux checks", name)
		assert.NoError(t, verifyAs(t, b, k.PublicPEM(), s.Manifest.Digest), "%s: as Flux verifies", name)
	}

	old, err := k.Bundle(signed.Repository, signed.Manifest.Digest)
	require.NoError(t, err)
	err = v.VerifySubject(old, signed)
	require.ErrorIs(t, err, ErrBadSignature)
	require.ErrorIs(t, err, ErrUnbound)
	assert.Contains(t, err.Error(), "publish it again")

	_, err = k.SubjectBundle(Subject{Repository: "alpha/bootstrap-edge-1", Manifest: signed.Manifest})
	assert.Error(t, err, "a chart is signed with its version")
}

// TestStatementNamesSubject: the signed statement is cosign v3's (the
// predicate type of cosign sign, one subject: the manifest's digest), with
// the repository and version as the subject's annotations, where cosign
// verify -a compares them.
func TestStatementNamesSubject(t *testing.T) {
	k := newKey(t)
	s := edge1(digest.FromString("chart"))
	b, err := k.SubjectBundle(s)
	require.NoError(t, err)
	var bun struct {
		DSSE struct {
			Payload     string `json:"payload"`
			PayloadType string `json:"payloadType"`
		} `json:"dsseEnvelope"`
	}
	require.NoError(t, json.Unmarshal(b, &bun))
	assert.Equal(t, "application/vnd.in-toto+json", bun.DSSE.PayloadType)
	payload, err := base64.StdEncoding.DecodeString(bun.DSSE.Payload)
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(payload, &st))
	assert.Equal(t, "https://sigstore.dev/cosign/sign/v1", st["predicateType"])
	assert.Equal(t, []any{map[string]any{
		"name":   "alpha/bootstrap-edge-1",
		"digest": map[string]any{"sha256": s.Manifest.Digest.Encoded()},
		"annotations": map[string]any{
			"solar.opendefense.cloud/repository": "alpha/bootstrap-edge-1",
			"solar.opendefense.cloud/version":    "0.0.1",
		},
	}}, st["subject"])
}

// TestCheckRefusesMovedSignature (S1, in a store): edge-1's signed chart
// copied as edge-2's is refused by Check, and so is a version tagged anew;
// Carry with a verifier carries no signature made for another place. When
// no signature verifies, Check names the most telling one.
func TestCheckRefusesMovedSignature(t *testing.T) {
	ctx := context.Background()
	k := newKey(t)
	v, err := NewVerifier(k.PublicPEM())
	require.NoError(t, err)
	store := memory.New()
	chart := pushMemoryChart(t, store)
	signed := Subject{Repository: "alpha/bootstrap-edge-1", Version: "0.0.1", Manifest: chart}
	_, _, err = Attach(ctx, store, signed, k)
	require.NoError(t, err)
	require.NoError(t, v.Check(ctx, store, signed))

	moved := Subject{Repository: "alpha/bootstrap-edge-2", Version: "0.0.2", Manifest: chart}
	err = v.Check(ctx, store, moved)
	require.ErrorIs(t, err, ErrElsewhere)
	ws, err := Carry(ctx, store, memory.New(), moved, v)
	require.NoError(t, err)
	assert.Empty(t, ws, "a signature made for another place is not carried")

	// An older solar's signature, and one of another key, beside: the
	// key's signature for edge-1 is what Check reports for edge-2; where
	// it is missing, the older solar's.
	pushReferrer(t, store, chart, mustBundle(t, newKey(t), moved))
	old, err := k.Bundle(moved.Repository, chart.Digest)
	require.NoError(t, err)
	pushReferrer(t, store, chart, old)
	assert.ErrorIs(t, v.Check(ctx, store, moved), ErrElsewhere)
	other := memory.New()
	chart = pushMemoryChart(t, other)
	pushReferrer(t, other, chart, mustBundle(t, newKey(t), signed))
	pushReferrer(t, other, chart, old)
	assert.ErrorIs(t, v.Check(ctx, other, signed), ErrUnbound)
}

func mustBundle(t *testing.T, k *Key, s Subject) []byte {
	t.Helper()
	b, err := k.SubjectBundle(s)
	require.NoError(t, err)
	return b
}

// pushMemoryChart pushes a manifest standing in for a chart into store.
func pushMemoryChart(t *testing.T, store *memory.Store) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	layer, err := oras.PushBytes(ctx, store, "application/vnd.cncf.helm.chart.content.v1.tar+gzip", []byte("a chart"))
	require.NoError(t, err)
	m, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "application/vnd.cncf.helm.config.v1+json",
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}, ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "1970-01-01T00:00:00Z"}})
	require.NoError(t, err)
	return m
}

// pushReferrer pushes the bundle b as a signature referrer of subject, as
// Referrer makes it, and returns the referrer's descriptor.
func pushReferrer(t *testing.T, store *memory.Store, subject ocispec.Descriptor, b []byte) ocispec.Descriptor {
	t.Helper()
	raw, layer, err := Referrer(b, subject)
	require.NoError(t, err)
	return pushSignature(t, store, raw, []ocispec.Descriptor{layer}, [][]byte{b})
}

// pushSignature pushes the referrer raw, the empty config and the layers.
func pushSignature(t *testing.T, store *memory.Store, raw []byte, layers []ocispec.Descriptor, blobs [][]byte) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	for i, l := range layers {
		require.NoError(t, pushIfMissing(ctx, store, l, blobs[i]))
	}
	require.NoError(t, pushIfMissing(ctx, store, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data))
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: api.MediaTypeSigstoreBundle, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	require.NoError(t, pushIfMissing(ctx, store, desc, raw))
	return desc
}
