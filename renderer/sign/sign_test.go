package sign

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/solar-pipeline/solar/api"
)

func newKey(t *testing.T) *Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// verifyAs checks b as Flux's source-controller (through cosign's
// pkg/cosign) does with a public key: sigstore-go, the key loaded by
// signature.LoadVerifier, no transparency log or timestamp, and the
// artifact's digest.
func verifyAs(t *testing.T, b []byte, pubPEM []byte, d digest.Digest) error {
	t.Helper()
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(v, time.Time{}, time.Time{}), nil
	})
	var bun bundle.Bundle
	if err := bun.UnmarshalJSON(b); err != nil {
		return err
	}
	sv, err := verify.NewVerifier(material, verify.WithNoObserverTimestamps())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(d.Encoded())
	_, err = sv.Verify(&bun, verify.NewPolicy(verify.WithArtifactDigest("sha256", raw), verify.WithKey()))
	return err
}

// TestBundleVerifies: the bundle verifies with the public key against the
// digest it names; not against another digest, not with another key; for
// each kind of key.
func TestBundleVerifies(t *testing.T) {
	for name, k := range kinds(t) {
		d := digest.FromString("a chart manifest")
		b, err := k.Bundle("ns/release-app", d)
		if err != nil {
			t.Fatal(err)
		}
		if err := verifyAs(t, b, k.PublicPEM(), d); err != nil {
			t.Fatalf("%s: the bundle does not verify: %v\n%s", name, err, b)
		}
		if err := verifyAs(t, b, k.PublicPEM(), digest.FromString("another")); err == nil {
			t.Fatalf("%s: verified against another digest", name)
		}
		if err := verifyAs(t, b, kinds(t)[name].PublicPEM(), d); err == nil {
			t.Fatalf("%s: verified with another key", name)
		}
		if strings.Contains(string(b), `"keyid":"`) && !strings.Contains(string(b), `"keyid":""`) {
			t.Fatalf("%s: the envelope names a key id (both verifiers want none): %s", name, b)
		}
	}
}

// TestBundleIsDeterministic: the same key and digest give the same bytes,
// so an unchanged chart's signature is not written again: also with ECDSA,
// which Solar signs as RFC 6979 says (cosign signs it at random).
func TestBundleIsDeterministic(t *testing.T) {
	for name, k := range kinds(t) {
		d := digest.FromString("a chart manifest")
		first, err := k.Bundle("ns/release-app", d)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			again, err := k.Bundle("ns/release-app", d)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, again) {
				t.Fatalf("%s: two bundles differ:\n%s\n%s", name, first, again)
			}
		}
	}
}

// TestReferrer: the manifest cosign reads a bundle from (one layer of the
// bundle's media type, the subject), the same bytes for the same bundle.
func TestReferrer(t *testing.T) {
	k := newKey(t)
	chart := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("chart"), Size: 5,
		Annotations: map[string]string{"not": "copied"}}
	b, err := k.Bundle("ns/release-app", chart.Digest)
	if err != nil {
		t.Fatal(err)
	}
	raw, layer, err := Referrer(b, chart)
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := Referrer(b, chart)
	if !bytes.Equal(raw, again) {
		t.Fatal("two referrers of one bundle differ")
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.ArtifactType != api.MediaTypeSigstoreBundle, len(m.Layers) != 1, m.Layers[0].MediaType != api.MediaTypeSigstoreBundle:
		t.Fatalf("not a bundle referrer: %s", raw)
	case m.Layers[0].Digest != digest.FromBytes(b) || layer.Digest != m.Layers[0].Digest:
		t.Fatalf("the layer is not the bundle: %s", raw)
	case m.Subject == nil || m.Subject.Digest != chart.Digest || m.Subject.Annotations != nil:
		t.Fatalf("the subject is not the chart: %s", raw)
	case m.Config.MediaType != ocispec.MediaTypeEmptyJSON:
		t.Fatalf("the config is not empty: %s", raw)
	case strings.Contains(string(raw), "created"):
		t.Fatalf("a creation time makes the referrer differ at each run: %s", raw)
	}
}

// BenchmarkBundle: what signing costs per chart, in process (the statement,
// the signature, the bundle's JSON), for each kind of key.
func BenchmarkBundle(b *testing.B) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	for _, signer := range []crypto.Signer{priv, ec} {
		k, err := NewKey(signer)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(keypair{k}.GetKeyAlgorithm(), func(b *testing.B) {
			d := digest.FromString("a chart manifest")
			for b.Loop() {
				if _, err := k.Bundle("ns/bootstrap-edge-1", d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
