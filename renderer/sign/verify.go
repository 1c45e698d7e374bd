package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/solar-pipeline/solar/api"
	"oras.land/oras-go/v2/content"
)

// maxBundle bounds a bundle read from a store.
const maxBundle = 1 << 20

// Verifier checks bundles as Flux's source-controller does with public
// keys (OCIRepository spec.verify, provider cosign): sigstore-go, each key
// loaded by signature.LoadVerifier, no transparency log or timestamps, the
// statement's subject digest compared with the manifest's.
type Verifier struct {
	keys []verifierKey
}

// verifierKey is one key of a Verifier: its name (the file it came from),
// the verifier of whole bundles, and the key as trusted material (to tell
// a signature of another key from other faults).
type verifierKey struct {
	name     string
	bundles  *verify.Verifier
	material root.TrustedMaterial
}

// NewVerifier verifies with the public keys, each one PEM "PUBLIC KEY"
// block, as each *.pub entry of Flux's Secret holds one (source-controller
// reads the first block of an entry and nothing else: a second key in one
// file would pass here and fail there, so it is refused). A signature that
// no key verifies names each key by its fingerprint; NewNamedVerifier
// names them.
func NewVerifier(pemBytes ...[]byte) (*Verifier, error) {
	return NewNamedVerifier(nil, pemBytes...)
}

// NewNamedVerifier is NewVerifier with a name for each key, such as the
// file it was read from: a signature that no key verifies says "the
// signature does not verify with NAME" (ErrOtherKey).
func NewNamedVerifier(names []string, pemBytes ...[]byte) (*Verifier, error) {
	v := &Verifier{}
	for i, p := range pemBytes {
		pub, err := ParsePublicKey(p)
		if err != nil {
			return nil, err
		}
		k, err := newVerifierKey(pub)
		if err != nil {
			return nil, err
		}
		if i < len(names) && names[i] != "" {
			k.name = names[i]
		}
		v.keys = append(v.keys, k)
	}
	if len(v.keys) == 0 {
		return nil, errors.New("no public key given")
	}
	return v, nil
}

// ParsePublicKey reads exactly one PEM "PUBLIC KEY" block (anything but
// blank space around it is refused) and returns the key.
func ParsePublicKey(p []byte) (crypto.PublicKey, error) {
	b, rest := pem.Decode(p)
	switch {
	case b == nil:
		return nil, errors.New("no PEM PUBLIC KEY found")
	case b.Type != "PUBLIC KEY":
		return nil, fmt.Errorf("a PEM %q where a PUBLIC KEY belongs (only public keys verify)", b.Type)
	case len(bytes.TrimSpace(rest)) > 0:
		return nil, errors.New("more than one PEM PUBLIC KEY, or other text after it: give one key per file (Flux reads one per Secret entry)")
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pem.EncodeToMemory(b))
	if err != nil {
		return nil, fmt.Errorf("the public key: %w", err)
	}
	return pub, nil
}

// PublicPEM is the public key pub as one PEM "PUBLIC KEY" block, nothing
// else: what a Secret entry gets.
func PublicPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func newVerifierKey(pub crypto.PublicKey) (verifierKey, error) {
	lv, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return verifierKey{}, fmt.Errorf("the public key: %w", err)
	}
	material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(lv, time.Time{}, time.Time{}), nil
	})
	bundles, err := verify.NewVerifier(material, verify.WithNoObserverTimestamps())
	if err != nil {
		return verifierKey{}, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return verifierKey{}, err
	}
	sum := sha256.Sum256(der)
	return verifierKey{name: "the key sha256:" + hex.EncodeToString(sum[:8]), bundles: bundles, material: material}, nil
}

// VerifyBundle says whether the bundle b signs the manifest subject with
// one of the keys, which is all Flux and cosign verify --key check: the
// key and the digest. Like cosign, it takes only bundles of version v0.3
// or later. A chart's signature is checked with VerifySubject.
func (v *Verifier) VerifyBundle(b []byte, subject ocispec.Descriptor) error {
	_, err := v.verify(b, subject)
	return err
}

// VerifySubject says whether the bundle b signs s: the manifest with one
// of the keys (VerifyBundle), as the repository and the version s names
// (ErrUnbound where the statement names none, ErrElsewhere where it names
// others).
func (v *Verifier) VerifySubject(b []byte, s Subject) error {
	res, err := v.verify(b, s.Manifest)
	if err != nil {
		return err
	}
	return bound(res, s)
}

// verify checks b against subject's digest with each key in turn, and
// returns what the first that verifies found.
func (v *Verifier) verify(b []byte, subject ocispec.Descriptor) (*verify.VerificationResult, error) {
	var bun bundle.Bundle
	if err := bun.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("%w: a damaged bundle: %v", ErrBadSignature, err)
	}
	if !bun.MinVersion("v0.3") {
		return nil, fmt.Errorf("%w: a bundle older than v0.3", ErrBadSignature)
	}
	raw, err := hex.DecodeString(subject.Digest.Encoded())
	if err != nil {
		return nil, err
	}
	policy := verify.NewPolicy(verify.WithArtifactDigest(subject.Digest.Algorithm().String(), raw), verify.WithKey())
	var last error
	for _, k := range v.keys {
		res, err := k.bundles.Verify(&bun, policy)
		if err == nil {
			return res, nil
		}
		last = err
	}
	if v.otherKey(&bun) {
		return nil, &OtherKeyError{Keys: v.names()}
	}
	return nil, fmt.Errorf("%w: %v", ErrBadSignature, last)
}

// otherKey says whether b's signature itself verifies with none of the
// keys: it was made with another key (sigstore says so only as "accepted
// signatures do not match threshold").
func (v *Verifier) otherKey(b *bundle.Bundle) bool {
	sig, err := b.SignatureContent()
	if err != nil {
		return false
	}
	vc, err := b.VerificationContent()
	if err != nil {
		return false
	}
	for _, k := range v.keys {
		if verify.VerifySignature(sig, vc, k.material) == nil {
			return false
		}
	}
	return true
}

func (v *Verifier) names() []string {
	var out []string
	for _, k := range v.keys {
		out = append(out, k.name)
	}
	return out
}

// OtherKeyError: a signature that none of Keys (their names) verifies,
// made with another key. It is an ErrBadSignature.
type OtherKeyError struct{ Keys []string }

func (e *OtherKeyError) Error() string {
	return "the signature does not verify with " + strings.Join(e.Keys, " or ")
}

func (e *OtherKeyError) Is(target error) bool { return target == ErrBadSignature }

// bound says whether the verified statement of res names s's repository
// and version on the subject that is s's manifest.
func bound(res *verify.VerificationResult, s Subject) error {
	if res.Statement == nil {
		return fmt.Errorf("%w: %w", ErrBadSignature, ErrUnbound)
	}
	for _, sub := range res.Statement.GetSubject() {
		if sub.GetDigest()["sha256"] != s.Manifest.Digest.Encoded() {
			continue
		}
		fields := sub.GetAnnotations().GetFields()
		repo, okRepo := fields[api.AnnotationSignedRepository]
		version, okVersion := fields[api.AnnotationSignedVersion]
		switch {
		case !okRepo && !okVersion:
			return fmt.Errorf("%w: %w", ErrBadSignature, ErrUnbound)
		case repo.GetStringValue() != s.Repository || version.GetStringValue() != s.Version:
			return fmt.Errorf("%w: %w: %s:%s", ErrBadSignature, ErrElsewhere, repo.GetStringValue(), version.GetStringValue())
		}
		return nil
	}
	return fmt.Errorf("%w: the statement does not name %s", ErrBadSignature, s.Manifest.Digest)
}

// Check says whether s's manifest, in t, carries a signature that verifies
// with one of the keys as s (VerifySubject): ErrUnsigned without any,
// ErrBadSignature when none verifies (wrapping ErrElsewhere or ErrUnbound
// where the key signed the manifest as something else, or before
// signatures named it). It reads the signatures as Flux's cosign does (a
// referrer of one bundle layer, else it is not a signature) and stops at
// the first that verifies.
func (v *Verifier) Check(ctx context.Context, t Target, s Subject) error {
	refs, err := referrers(ctx, t, s.Manifest)
	if err != nil {
		return err
	}
	var found error
	for _, r := range refs {
		sg, err := readSignature(ctx, t, r)
		if errors.Is(err, errNotSignature) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the signature %s of %s: %w", r.Digest, s.Manifest.Digest, err)
		}
		err = v.VerifySubject(sg.bundle, s)
		if err == nil {
			return nil
		}
		if found == nil || rank(err) > rank(found) {
			found = err
		}
	}
	if found == nil {
		return ErrUnsigned
	}
	return found
}

// rank orders what Check reports when no signature verifies: a signature
// of the key for another repository or version says most, one from
// before signatures named them next, one of another key least.
func rank(err error) int {
	switch {
	case errors.Is(err, ErrElsewhere):
		return 2
	case errors.Is(err, ErrUnbound):
		return 1
	}
	return 0
}

// sigRead is a signature referrer as read: its manifest, raw and
// decoded, and its bundle.
type sigRead struct {
	raw    []byte
	m      *ocispec.Manifest
	bundle []byte
}

// readSignature reads the signature referrer r: its manifest must have one
// layer, a Sigstore bundle, each of at most maxBundle bytes (cosign's rule;
// anything else is errNotSignature).
func readSignature(ctx context.Context, t Target, r ocispec.Descriptor) (*sigRead, error) {
	if r.Size > maxBundle {
		return nil, errNotSignature
	}
	raw, err := content.FetchAll(ctx, t, r)
	if err != nil {
		return nil, err
	}
	m, err := decodeManifest(raw)
	if err != nil {
		return nil, err
	}
	if len(m.Layers) != 1 || !strings.HasPrefix(m.Layers[0].MediaType, bundleMediaTypePrefix) || m.Layers[0].Size > maxBundle {
		return nil, errNotSignature
	}
	b, err := content.FetchAll(ctx, t, m.Layers[0])
	if err != nil {
		return nil, err
	}
	return &sigRead{raw: raw, m: m, bundle: b}, nil
}

// bundleMediaTypePrefix is what cosign takes as a bundle layer.
const bundleMediaTypePrefix = api.MediaTypeSigstoreBundlePrefix
