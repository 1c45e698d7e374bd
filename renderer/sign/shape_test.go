package sign

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/solar-pipeline/solar/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content/memory"
)

// v03 is the media type of a Sigstore bundle v0.3, the oldest Flux's
// cosign reads from a referrer; written out here so that a lower version
// in the code fails this test.
const v03 = "application/vnd.dev.sigstore.bundle.v0.3+json"

// TestBundleIsV03 (S2): Solar writes v0.3 bundles, in a referrer whose
// artifact type and one layer say so; a bundle older than v0.3, which
// Flux's cosign refuses (bundle version too old), is refused too, although
// its signature holds.
func TestBundleIsV03(t *testing.T) {
	k := newKey(t)
	s := edge1(digest.FromString("chart"))
	b := mustBundle(t, k, s)
	var head struct {
		MediaType string `json:"mediaType"`
	}
	require.NoError(t, json.Unmarshal(b, &head))
	assert.Equal(t, v03, head.MediaType, "the bundle's own media type")
	raw, layer, err := Referrer(b, s.Manifest)
	require.NoError(t, err)
	var m ocispec.Manifest
	require.NoError(t, json.Unmarshal(raw, &m))
	assert.Equal(t, v03, m.ArtifactType)
	require.Len(t, m.Layers, 1)
	assert.Equal(t, v03, m.Layers[0].MediaType)
	assert.Equal(t, v03, layer.MediaType)

	v, err := NewVerifier(k.PublicPEM())
	require.NoError(t, err)
	require.NoError(t, v.VerifySubject(b, s))
	for _, old := range []string{"application/vnd.dev.sigstore.bundle+json;version=0.2", "application/vnd.dev.sigstore.bundle+json;version=0.1"} {
		lowered := []byte(strings.Replace(string(b), v03, old, 1))
		require.NotEqual(t, b, lowered)
		err := v.VerifyBundle(lowered, s.Manifest)
		require.ErrorIs(t, err, ErrBadSignature, old)
		assert.Contains(t, err.Error(), "older than v0.3", old)
		assert.Error(t, v.VerifySubject(lowered, s), old)
	}
}

// TestVerifyBundleChecks (S3): VerifyBundle takes the bundle of one of its
// keys over the digest it is asked about, and nothing else: not another
// key's, not another digest's, not a statement changed after signing, not
// a bundle without a signature, not garbage.
func TestVerifyBundleChecks(t *testing.T) {
	k := newKey(t)
	s := edge1(digest.FromString("chart"))
	b := mustBundle(t, k, s)
	v, err := NewVerifier(newKey(t).PublicPEM(), k.PublicPEM())
	require.NoError(t, err)
	require.NoError(t, v.VerifyBundle(b, s.Manifest), "the second key verifies")

	otherDigest := s.Manifest
	otherDigest.Digest = digest.FromString("another chart")
	refused := map[string]struct {
		bundle  []byte
		subject ocispec.Descriptor
	}{
		"another key":        {mustBundle(t, newKey(t), s), s.Manifest},
		"another digest":     {b, otherDigest},
		"statement changed":  {rewritePayload(t, b, `"0.0.1"`, `"0.0.9"`), s.Manifest},
		"no signature":       {rewriteSignature(t, b, ""), s.Manifest},
		"another signature":  {rewriteSignature(t, b, base64.StdEncoding.EncodeToString(make([]byte, 64))), s.Manifest},
		"garbage":            {[]byte("{not a bundle"), s.Manifest},
		"empty":              {nil, s.Manifest},
		"an empty JSON body": {[]byte("{}"), s.Manifest},
	}
	for name, c := range refused {
		err := v.VerifyBundle(c.bundle, c.subject)
		assert.ErrorIs(t, err, ErrBadSignature, name)
		assert.Error(t, v.VerifySubject(c.bundle, Subject{Repository: s.Repository, Version: s.Version, Manifest: c.subject}), name)
	}
}

// rewritePayload replaces old with new in the statement of the bundle b,
// leaving its signature as it was.
func rewritePayload(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	var bun map[string]any
	require.NoError(t, json.Unmarshal(b, &bun))
	env := bun["dsseEnvelope"].(map[string]any)
	payload, err := base64.StdEncoding.DecodeString(env["payload"].(string))
	require.NoError(t, err)
	changed := strings.Replace(string(payload), old, new, 1)
	require.NotEqual(t, string(payload), changed)
	env["payload"] = base64.StdEncoding.EncodeToString([]byte(changed))
	out, err := json.Marshal(bun)
	require.NoError(t, err)
	return out
}

// rewriteSignature sets the envelope's signature to sig (base64).
func rewriteSignature(t *testing.T, b []byte, sig string) []byte {
	t.Helper()
	var bun map[string]any
	require.NoError(t, json.Unmarshal(b, &bun))
	env := bun["dsseEnvelope"].(map[string]any)
	sigs := env["signatures"].([]any)
	sigs[0].(map[string]any)["sig"] = sig
	out, err := json.Marshal(bun)
	require.NoError(t, err)
	return out
}

// TestTwoLayerReferrerIsNoSignature (S4): a referrer of two layers, the
// first a good bundle, is not a signature (cosign, which Flux runs, wants
// exactly one layer): Check finds the chart unsigned, Carry leaves it
// behind, and Referrer makes one layer only.
func TestTwoLayerReferrerIsNoSignature(t *testing.T) {
	ctx := context.Background()
	k := newKey(t)
	v, err := NewVerifier(k.PublicPEM())
	require.NoError(t, err)
	store := memory.New()
	chart := pushMemoryChart(t, store)
	s := Subject{Repository: "alpha/bootstrap-edge-1", Version: "0.0.1", Manifest: chart}
	b := mustBundle(t, k, s)
	bundleLayer := ocispec.Descriptor{MediaType: api.MediaTypeSigstoreBundle, Digest: digest.FromBytes(b), Size: int64(len(b))}
	extra := []byte("more")
	extraLayer := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: digest.FromBytes(extra), Size: int64(len(extra))}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: api.MediaTypeSigstoreBundle,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{bundleLayer, extraLayer},
		Subject:      &ocispec.Descriptor{MediaType: chart.MediaType, Digest: chart.Digest, Size: chart.Size},
		Annotations:  map[string]string{api.AnnotationBundleContent: "dsse-envelope", api.AnnotationBundlePredicate: PredicateType},
	}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	pushSignature(t, store, raw, m.Layers, [][]byte{b, extra})

	assert.ErrorIs(t, v.Check(ctx, store, s), ErrUnsigned, "two layers: not a signature")
	ws, err := Carry(ctx, store, memory.New(), s, nil)
	require.NoError(t, err)
	assert.Empty(t, ws, "not carried")

	one, _, err := Referrer(b, chart)
	require.NoError(t, err)
	var made ocispec.Manifest
	require.NoError(t, json.Unmarshal(one, &made))
	assert.Len(t, made.Layers, 1)
	pushReferrer(t, store, chart, b)
	assert.NoError(t, v.Check(ctx, store, s), "the one-layer referrer of the same bundle is")
}
