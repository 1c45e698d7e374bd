package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// Binary is an agent executable for one platform.
type Binary struct {
	// Platform is OS/ARCH[/VARIANT].
	Platform string
	// Name is the file name, the layer's title.
	Name string
	Data []byte
}

// Blob is one node of a packed artifact: its descriptor and its bytes.
type Blob struct {
	Descriptor ocispec.Descriptor
	Data       []byte
}

// Packed is an artifact packed as bytes: its root (an index or a manifest)
// and every node of it, the root included, ready to be put into a
// repository under Tag.
type Packed struct {
	Tag  string
	Root ocispec.Descriptor
	// Layers are the agent binaries by platform.
	Layers map[string]ocispec.Descriptor
	// Blobs are the artifact's nodes, each once, the root last.
	Blobs []Blob
}

// add adds a node, unless the artifact holds it already, and returns its
// descriptor.
func (p *Packed) add(mediaType string, data []byte) ocispec.Descriptor {
	d := describe(mediaType, data)
	if !slices.ContainsFunc(p.Blobs, func(b Blob) bool { return b.Descriptor.Digest == d.Digest }) {
		p.Blobs = append(p.Blobs, Blob{Descriptor: d, Data: data})
	}
	return d
}

// describe is the descriptor of data (as oras' content.NewDescriptorFromBytes).
func describe(mediaType string, data []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
}

// PackAgent packs one manifest per binary (the binary its single layer, with
// its title, digest and size) and an index over them with their platforms,
// tagged version, created at created (zero: publish.Epoch). The manifests
// are byte for byte what oras.PackManifest (version 1.1) makes of them.
func PackAgent(version string, bins []Binary, created time.Time) (*Packed, error) {
	if len(bins) == 0 {
		return nil, errors.New("no agent binary to push")
	}
	bins = slices.Clone(bins)
	slices.SortFunc(bins, func(a, b Binary) int { return strings.Compare(a.Platform, b.Platform) })
	p := &Packed{Tag: version, Layers: map[string]ocispec.Descriptor{}}
	annotations := map[string]string{ocispec.AnnotationCreated: publish.Created(created)}
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		ArtifactType: api.ArtifactTypeAgent, Manifests: []ocispec.Descriptor{},
		Annotations: map[string]string{ocispec.AnnotationCreated: annotations[ocispec.AnnotationCreated], ocispec.AnnotationVersion: version}}
	for i, b := range bins {
		if _, err := ParsePlatform(b.Platform); err != nil {
			return nil, err
		}
		if i > 0 && bins[i-1].Platform == b.Platform {
			return nil, fmt.Errorf("two binaries for platform %s", b.Platform)
		}
		m, err := p.packBinary(b, annotations)
		if err != nil {
			return nil, err
		}
		index.Manifests = append(index.Manifests, m)
	}
	data, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	p.Root = p.add(ocispec.MediaTypeImageIndex, data)
	return p, nil
}

// packBinary packs the manifest of one binary, and returns its descriptor
// with its platform.
func (p *Packed) packBinary(b Binary, annotations map[string]string) (ocispec.Descriptor, error) {
	platform, err := ParsePlatform(b.Platform)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layer := p.add(api.MediaTypeAgentBinary, b.Data)
	layer.Annotations = map[string]string{ocispec.AnnotationTitle: b.Name}
	// An image config naming the platform, not the empty one: image tools
	// (go-containerregistry's validate, crane) check a child's platform
	// against its config. No diff ids: the binary is not a filesystem layer.
	config, err := json.Marshal(ocispec.Image{Platform: platform, RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{}}})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	manifest, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2},
		Config: p.add(ocispec.MediaTypeImageConfig, config), MediaType: ocispec.MediaTypeImageManifest,
		Layers: []ocispec.Descriptor{layer}, ArtifactType: api.ArtifactTypeAgent, Annotations: annotations})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("packing the binary for %s: %w", b.Platform, err)
	}
	m := p.add(ocispec.MediaTypeImageManifest, manifest)
	m.ArtifactType, m.Annotations, m.Platform = api.ArtifactTypeAgent, annotations, &platform
	p.Layers[b.Platform] = layer
	return m, nil
}

// PackAttempt packs an attempt as an OCI artifact (the attempt's JSON its
// single layer), tagged with its UUID: its digest identifies it. The bytes
// are wire.AttemptArtifact's, the ones a device checks the binding against;
// created is fixed (the Unix epoch), so that the digest is a function of the
// attempt alone and its UUID stays bound to one digest.
func PackAttempt(a wire.Attempt) (*Packed, error) {
	if err := a.Verify(); err != nil {
		return nil, err
	}
	manifest, config, layer, _, err := wire.AttemptArtifact(a)
	if err != nil {
		return nil, err
	}
	p := &Packed{Tag: a.UUID}
	p.add(api.MediaTypeAttempt, layer)
	p.add(api.MediaTypeOCIEmpty, config)
	p.Root = p.add(api.MediaTypeOCIManifest, manifest)
	p.Root.ArtifactType = api.ArtifactTypeAttempt
	return p, nil
}

// ParsePlatform parses OS/ARCH[/VARIANT].
func ParsePlatform(s string) (ocispec.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") {
		return ocispec.Platform{}, fmt.Errorf("invalid platform %q: want OS/ARCH[/VARIANT], such as linux/arm64", s)
	}
	p := ocispec.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// PlatformString is the OS/ARCH[/VARIANT] of a platform.
func PlatformString(p *ocispec.Platform) string {
	if p == nil {
		return ""
	}
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}
