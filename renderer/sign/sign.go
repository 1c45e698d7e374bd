// Package sign signs chart manifests so that Flux's source-controller
// (OCIRepository spec.verify, provider cosign, with public keys) and the
// cosign CLI (cosign verify --key --insecure-ignore-tlog) accept them
// offline, without a transparency log: a Sigstore bundle v0.3 whose DSSE
// envelope holds an in-toto statement naming the manifest's digest, signed
// with pure Ed25519 or ECDSA P-256 with SHA-256 (Key), attached to the
// manifest as an OCI 1.1 referrer. The statement's subject also names the
// repository and version the chart is published as (Subject), which Flux
// does not read and Solar checks, so that a signed chart moved to another
// repository or version is refused.
//
// Signatures are deterministic: Ed25519 by design, ECDSA because Solar
// signs it as RFC 6979 says (cosign signs ECDSA at random). The same key
// and manifest give the same bundle, byte for byte, and so the same
// referrer digest; an unchanged chart is never signed anew. Both verifiers
// load an Ed25519 key as a pure Ed25519 verifier (sigstore's
// signature.LoadVerifier); the cosign CLI itself signs Ed25519ph, which is
// why Solar signs on its own, with sigstore-go's bundle code.
package sign

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/solar-pipeline/solar/api"
	"google.golang.org/protobuf/encoding/protojson"
)

// The statement and predicate types of a signature, as cosign v3 writes
// them and reads them back (its media types and annotations are in api).
const (
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://sigstore.dev/cosign/sign/v1"
)

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
// (api.AnnotationSignedRepository, api.AnnotationSignedVersion), where cosign sign -a puts its
// annotations and cosign verify -a checks them. Flux and cosign verify the
// key and the digest, as for any cosign v3 bundle; Verifier.VerifySubject
// checks the names too.
func (k *Key) SubjectBundle(s Subject) ([]byte, error) {
	if s.Repository == "" || s.Version == "" {
		return nil, fmt.Errorf("signing %s: a signature names a repository and a version", s)
	}
	return k.bundle(s.Repository, s.Manifest.Digest, map[string]string{api.AnnotationSignedRepository: s.Repository, api.AnnotationSignedVersion: s.Version})
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
	b, err := sgsign.Bundle(&sgsign.DSSEData{Data: statement, PayloadType: api.MediaTypeInTotoPayload}, keypair{k}, sgsign.BundleOptions{})
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

// Referrer is the OCI image manifest that attaches the bundle b to
// subject (a chart manifest), as cosign v3 attaches its bundles: artifact
// type and single layer the bundle's media type, the empty config, the
// bundle's content and predicate type as annotations, no creation time
// (the same bundle, the same manifest). It returns the manifest and the
// bundle's descriptor (its layer, to push beside it).
func Referrer(b []byte, subject ocispec.Descriptor) ([]byte, ocispec.Descriptor, error) {
	layer := ocispec.Descriptor{MediaType: api.MediaTypeSigstoreBundle, Digest: digest.FromBytes(b), Size: int64(len(b))}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: api.MediaTypeSigstoreBundle,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{layer},
		Subject:      &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Annotations:  map[string]string{api.AnnotationBundleContent: "dsse-envelope", api.AnnotationBundlePredicate: PredicateType},
	}
	raw, err := json.Marshal(m)
	return raw, layer, err
}
