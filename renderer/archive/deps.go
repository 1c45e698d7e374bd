package archive

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/api"
)

// An archive of solar export --with-dependencies also carries the
// application charts and container images the layout's Targets need
// (solar artifacts), each copied whole from its source registry: an image
// index with every platform manifest and blob, and the signatures the
// source has for it (cosign's sha256-<hex>.sig tag, OCI referrers).
// solar-export.json is then of FormatDependencies, so that a solar that
// knows only Format refuses it clearly instead of pushing half of it.
const (
	FormatDependencies = "solar-export/v2"
	// AnnotationDependencyKind, on a dependency's entry of index.json
	// (which also carries org.opencontainers.image.ref.name, its source
	// reference), says its kind: KindChart or KindImage.
	AnnotationDependencyKind = api.Group + "/dependency-kind"
	// AnnotationSignatureOf, on a signature's entry of index.json, names
	// the source reference of the dependency it signs.
	AnnotationSignatureOf = api.Group + "/signature-of"
	KindChart             = "chart"
	KindImage             = "image"
)

// Dependency is one application chart or container image an archive
// carries.
type Dependency struct {
	Kind string `json:"kind"`
	// Reference is the full source reference, HOST/PATH[:TAG][@DIGEST]
	// (Docker Hub's short names expanded: docker.io/library/nginx:1.27).
	Reference string `json:"reference"`
	// Digest and MediaType are its top manifest's (an image manifest or
	// an index), resolved once at export time.
	Digest    digest.Digest `json:"digest"`
	MediaType string        `json:"mediaType"`
	// Signatures are the digests of the manifests that sign it, sorted:
	// its cosign signature (the tag sha256-<hex>.sig) and its referrers.
	Signatures []digest.Digest `json:"signatures"`
}

// FullReference is ref (as an image is written in a manifest, or a chart's
// HOST/PATH:TAG) with its registry, repository and tag spelled out: a
// reference with neither tag nor digest is of the tag "latest". The digest
// is kept.
func FullReference(ref string) (string, error) {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return "", fmt.Errorf("%q is not a reference: %w", ref, err)
	}
	host := r.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io"
	}
	out := host + "/" + r.Context().RepositoryStr()
	before, dgst, hasDigest := strings.Cut(ref, "@")
	if t, ok := r.(name.Tag); ok {
		out += ":" + t.TagStr()
	} else if i := strings.LastIndex(before, ":"); i >= 0 && !strings.Contains(before[i:], "/") {
		out += before[i:]
	}
	if hasDigest {
		out += "@" + dgst
	}
	return out, nil
}

// splitReference is a full reference's repository (HOST/PATH), tag and
// digest ("" when it has none).
func splitReference(ref string) (repo, tag string, dgst digest.Digest) {
	before, d, _ := strings.Cut(ref, "@")
	repo = before
	if i := strings.LastIndex(before, ":"); i >= 0 && !strings.Contains(before[i:], "/") {
		repo, tag = before[:i], before[i+1:]
	}
	return repo, tag, digest.Digest(d)
}

// Media types of Docker's manifests a dependency may be made of (most
// images are), besides OCI's.
const (
	mediaTypeDockerManifest = string(types.DockerManifestSchema2)
	mediaTypeDockerList     = string(types.DockerManifestList)
)

func isIndex(mediaType string) bool {
	return mediaType == ocispec.MediaTypeImageIndex || mediaType == mediaTypeDockerList
}

func isManifest(mediaType string) bool {
	return mediaType == ocispec.MediaTypeImageManifest || mediaType == mediaTypeDockerManifest
}

// anyManifest is an image manifest or an index, OCI's or Docker's.
type anyManifest struct {
	MediaType string               `json:"mediaType"`
	Config    ocispec.Descriptor   `json:"config"`
	Layers    []ocispec.Descriptor `json:"layers"`
	Manifests []ocispec.Descriptor `json:"manifests"`
	Subject   *ocispec.Descriptor  `json:"subject"`
}

// decodeAny decodes the manifest or index b of descriptor d: its media
// type must be one a dependency may have, and the body's (when it says
// one) the descriptor's.
func decodeAny(d ocispec.Descriptor, b []byte) (*anyManifest, error) {
	if !isIndex(d.MediaType) && !isManifest(d.MediaType) {
		return nil, fmt.Errorf("manifest %s is a %q: not an image manifest or index", d.Digest, d.MediaType)
	}
	var m anyManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", d.Digest, err)
	}
	if m.MediaType != "" && m.MediaType != d.MediaType {
		return nil, fmt.Errorf("manifest %s says it is a %q, named as a %q", d.Digest, m.MediaType, d.MediaType)
	}
	return &m, nil
}

// children are the descriptors a manifest names: an index's manifests, or
// an image manifest's config and layers.
func (m *anyManifest) children(mediaType string) []ocispec.Descriptor {
	if isIndex(mediaType) {
		return m.Manifests
	}
	return append([]ocispec.Descriptor{m.Config}, m.Layers...)
}

// maxDepth bounds how deep indexes nest in a dependency: an index of
// image manifests is depth 1.
const maxDepth = 3
