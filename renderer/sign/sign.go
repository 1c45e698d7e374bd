// Package sign signs chart manifests so that Flux's source-controller
// (OCIRepository spec.verify, provider cosign, with public keys) and the
// cosign CLI (cosign verify --key --insecure-ignore-tlog) accept them
// offline, without a transparency log: a Sigstore bundle v0.3 whose DSSE
// envelope holds an in-toto statement naming the manifest's digest, signed
// with pure Ed25519, attached to the manifest as an OCI 1.1 referrer. The
// statement's subject also names the repository and version the chart is
// published as (Subject), which Flux does not read and Solar checks, so
// that a signed chart moved to another repository or version is refused.
//
// Ed25519 is deterministic: the same key and manifest give the same
// bundle, byte for byte, and so the same referrer digest; an unchanged
// chart is never signed anew. Both verifiers load an Ed25519 key as a
// pure Ed25519 verifier (sigstore's signature.LoadVerifier); the cosign
// CLI itself signs Ed25519ph, which is why Solar signs on its own, with
// sigstore-go's bundle code.
package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
)

// Media types and annotations of a signature referrer, as cosign v3
// writes them and reads them back (pkg/oci/remote: one layer whose media
// type is the bundle's).
const (
	BundleMediaType     = "application/vnd.dev.sigstore.bundle.v0.3+json"
	StatementType       = "https://in-toto.io/Statement/v1"
	PredicateType       = "https://sigstore.dev/cosign/sign/v1"
	InTotoPayloadType   = "application/vnd.in-toto+json"
	AnnotationContent   = "dev.sigstore.bundle.content"
	AnnotationPredicate = "dev.sigstore.bundle.predicateType"
)

// The annotations of a signed statement's subject that name where the
// chart is published (Subject): what binds a signature to one repository
// and one version, so that a signed chart moved to another (another
// Target's, a newer version's tag) is refused.
const (
	AnnotationRepository = "solar.opendefense.cloud/repository"
	AnnotationVersion    = "solar.opendefense.cloud/version"
)

// Key is an Ed25519 signing key.
type Key struct {
	priv ed25519.PrivateKey
	pub  []byte // PKIX DER
}

// ParseKey reads an Ed25519 private key, PEM "PRIVATE KEY" (PKCS #8), as
// `openssl genpkey -algorithm ed25519` writes it.
func ParseKey(pemBytes []byte) (*Key, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM PRIVATE KEY (PKCS #8): make one with openssl genpkey -algorithm ed25519")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the signing key: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the signing key is a %T: Solar signs with Ed25519 (deterministic signatures)", k)
	}
	return NewKey(priv)
}

// NewKey is the Key of priv.
func NewKey(priv ed25519.PrivateKey) (*Key, error) {
	pub, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, err
	}
	return &Key{priv: priv, pub: pub}, nil
}

// PublicPEM is the public key, PEM "PUBLIC KEY": what a Flux Secret's
// *.pub entry and cosign verify --key take.
func (k *Key) PublicPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: k.pub})
}

// Subject is what a chart's signature signs: the manifest, and the
// repository and version it is published as. Repository is the name under
// the registry's prefix ("alpha/bootstrap-edge-1"), as Solar's results name
// it: a tree of charts moved whole to another registry or prefix keeps its
// signatures, a chart moved to another repository or version does not.
type Subject struct {
	Repository, Version string
	Manifest            ocispec.Descriptor
}

func (s Subject) String() string { return s.Repository + ":" + s.Version }

// Bundle is the bundle that signs the blob of digest d (named name in the
// statement) and says nothing of where it is published: for what carries
// its own identity, such as a namespace's index. Charts are signed with
// SubjectBundle.
func (k *Key) Bundle(name string, d digest.Digest) ([]byte, error) {
	return k.bundle(name, d, nil)
}

// SubjectBundle is the bundle that signs s: its statement's subject is the
// manifest's digest with s's repository and version as annotations
// (AnnotationRepository, AnnotationVersion), where cosign sign -a puts its
// annotations and cosign verify -a checks them. Flux and cosign verify the
// key and the digest, as for any cosign v3 bundle; Verifier.VerifySubject
// checks the names too.
func (k *Key) SubjectBundle(s Subject) ([]byte, error) {
	if s.Repository == "" || s.Version == "" {
		return nil, fmt.Errorf("signing %s: a signature names a repository and a version", s)
	}
	return k.bundle(s.Repository, s.Manifest.Digest, map[string]string{AnnotationRepository: s.Repository, AnnotationVersion: s.Version})
}

// bundle signs the in-toto statement whose one subject is d, named name,
// with annotations when given, as compact JSON.
func (k *Key) bundle(name string, d digest.Digest, annotations map[string]string) ([]byte, error) {
	if err := d.Validate(); err != nil || d.Algorithm() != digest.SHA256 {
		return nil, fmt.Errorf("not a sha256 digest: %q", d)
	}
	subject := map[string]any{"name": name, "digest": map[string]string{"sha256": d.Encoded()}}
	if annotations != nil {
		subject["annotations"] = annotations
	}
	statement, err := json.Marshal(map[string]any{
		"_type":         StatementType,
		"subject":       []any{subject},
		"predicateType": PredicateType,
		"predicate":     map[string]any{},
	})
	if err != nil {
		return nil, err
	}
	b, err := sgsign.Bundle(&sgsign.DSSEData{Data: statement, PayloadType: InTotoPayloadType}, keypair{k}, sgsign.BundleOptions{})
	if err != nil {
		return nil, err
	}
	// protojson varies its whitespace on purpose; compacted, the bytes are
	// the same at every run.
	raw, err := protojson.Marshal(b)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// keypair is sigstore-go's sign.Keypair for a Key: pure Ed25519, and a
// hint that is the key's SHA-256 fingerprint (no key id in the envelope,
// which both verifiers want empty).
type keypair struct{ k *Key }

func (p keypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_512
}

func (p keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return protocommon.PublicKeyDetails_PKIX_ED25519
}

func (p keypair) GetHint() []byte {
	sum := sha256.Sum256(p.k.pub)
	return []byte(base64.StdEncoding.EncodeToString(sum[:]))
}

func (p keypair) GetKeyAlgorithm() string        { return "ED25519" }
func (p keypair) GetPublicKey() crypto.PublicKey { return p.k.priv.Public() }

func (p keypair) GetPublicKeyPem() (string, error) { return string(p.k.PublicPEM()), nil }

func (p keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	return ed25519.Sign(p.k.priv, data), data, nil
}

// Referrer is the OCI image manifest that attaches the bundle b to
// subject (a chart manifest), as cosign v3 attaches its bundles: artifact
// type and single layer the bundle's media type, the empty config, the
// bundle's content and predicate type as annotations, no creation time
// (the same bundle, the same manifest). It returns the manifest and the
// bundle's descriptor (its layer, to push beside it).
func Referrer(b []byte, subject ocispec.Descriptor) ([]byte, ocispec.Descriptor, error) {
	layer := ocispec.Descriptor{MediaType: BundleMediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: BundleMediaType,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{layer},
		Subject:      &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Annotations:  map[string]string{AnnotationContent: "dsse-envelope", AnnotationPredicate: PredicateType},
	}
	raw, err := json.Marshal(m)
	return raw, layer, err
}
