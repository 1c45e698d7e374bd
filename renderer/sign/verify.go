package sign

import (
	"context"
	"crypto"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"oras.land/oras-go/v2/content"
)

// What Check finds wrong with a chart's signatures.
var (
	ErrUnsigned     = errors.New("not signed")
	ErrBadSignature = errors.New("no signature verifies with the keys given")
)

// maxBundle bounds a bundle read from a store.
const maxBundle = 1 << 20

// Verifier checks bundles as Flux's source-controller does with public
// keys (OCIRepository spec.verify, provider cosign): sigstore-go, each key
// loaded by signature.LoadVerifier, no transparency log or timestamps, the
// statement's subject digest compared with the manifest's.
type Verifier struct {
	keys []*verify.Verifier
}

// NewVerifier verifies with the public keys in pemBytes (one or more PEM
// "PUBLIC KEY" blocks: what the *.pub entries of Flux's Secret hold).
func NewVerifier(pemBytes ...[]byte) (*Verifier, error) {
	v := &Verifier{}
	for _, p := range pemBytes {
		for rest := p; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type != "PUBLIC KEY" {
				return nil, fmt.Errorf("a PEM %q where a PUBLIC KEY belongs (only public keys verify)", b.Type)
			}
			pub, err := cryptoutils.UnmarshalPEMToPublicKey(pem.EncodeToMemory(b))
			if err != nil {
				return nil, fmt.Errorf("the public key: %w", err)
			}
			sv, err := keyVerifier(pub)
			if err != nil {
				return nil, err
			}
			v.keys = append(v.keys, sv)
		}
	}
	if len(v.keys) == 0 {
		return nil, errors.New("no PEM PUBLIC KEY found")
	}
	return v, nil
}

func keyVerifier(pub crypto.PublicKey) (*verify.Verifier, error) {
	lv, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("the public key: %w", err)
	}
	material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(lv, time.Time{}, time.Time{}), nil
	})
	return verify.NewVerifier(material, verify.WithNoObserverTimestamps())
}

// VerifyBundle says whether the bundle b signs the manifest subject with
// one of the keys.
func (v *Verifier) VerifyBundle(b []byte, subject ocispec.Descriptor) error {
	var bun bundle.Bundle
	if err := bun.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("%w: a damaged bundle: %v", ErrBadSignature, err)
	}
	raw, err := hex.DecodeString(subject.Digest.Encoded())
	if err != nil {
		return err
	}
	policy := verify.NewPolicy(verify.WithArtifactDigest(subject.Digest.Algorithm().String(), raw), verify.WithKey())
	var last error
	for _, k := range v.keys {
		if _, last = k.Verify(&bun, policy); last == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: %v", ErrBadSignature, last)
}

// Check says whether subject, a manifest in t, carries a signature that
// verifies with one of the keys: ErrUnsigned without any, ErrBadSignature
// when none verifies.
func (v *Verifier) Check(ctx context.Context, t Target, subject ocispec.Descriptor) error {
	bundles, err := Bundles(ctx, t, subject)
	if err != nil {
		return err
	}
	if len(bundles) == 0 {
		return ErrUnsigned
	}
	var last error
	for _, b := range bundles {
		if last = v.VerifyBundle(b, subject); last == nil {
			return nil
		}
	}
	return last
}

// Bundles reads the bundles attached to subject in t.
func Bundles(ctx context.Context, t Target, subject ocispec.Descriptor) ([][]byte, error) {
	refs, err := referrers(ctx, t, subject)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, r := range refs {
		m, err := fetchManifest(ctx, t, r)
		if err != nil {
			return nil, err
		}
		for _, l := range m.Layers {
			if l.MediaType != BundleMediaType {
				continue
			}
			if l.Size > maxBundle {
				return nil, fmt.Errorf("the signature %s of %s is %d bytes: too large", r.Digest, subject.Digest, l.Size)
			}
			b, err := content.FetchAll(ctx, t, l)
			if err != nil {
				return nil, fmt.Errorf("reading the signature %s of %s: %w", r.Digest, subject.Digest, err)
			}
			out = append(out, b)
		}
	}
	return out, nil
}
