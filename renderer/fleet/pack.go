package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Binary is an agent executable for one platform.
type Binary struct {
	// Platform is OS/ARCH[/VARIANT].
	Platform string
	// Name is the file name, the layer's title.
	Name string
	Data []byte
}

// Packed is an artifact packed in memory: its root (an index or a manifest)
// and every node below it, ready to be put into a repository under Tag.
type Packed struct {
	Tag  string
	Root ocispec.Descriptor
	// Layers are the agent binaries by platform.
	Layers map[string]ocispec.Descriptor
	store  *memory.Store
}

// PackAgent packs one manifest per binary (the binary its single layer, with
// its title, digest and size) and an index over them with their platforms,
// tagged version, created at created (zero: publish.Epoch).
func PackAgent(ctx context.Context, version string, bins []Binary, created time.Time) (*Packed, error) {
	if len(bins) == 0 {
		return nil, errors.New("no agent binary to push")
	}
	bins = slices.Clone(bins)
	slices.SortFunc(bins, func(a, b Binary) int { return strings.Compare(a.Platform, b.Platform) })
	p := &Packed{Tag: version, Layers: map[string]ocispec.Descriptor{}, store: memory.New()}
	annotations := map[string]string{ocispec.AnnotationCreated: publish.Created(created)}
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		ArtifactType: api.ArtifactTypeAgent, Manifests: []ocispec.Descriptor{},
		Annotations: map[string]string{ocispec.AnnotationCreated: annotations[ocispec.AnnotationCreated], ocispec.AnnotationVersion: version}}
	for i, b := range bins {
		platform, err := ParsePlatform(b.Platform)
		if err != nil {
			return nil, err
		}
		if i > 0 && bins[i-1].Platform == b.Platform {
			return nil, fmt.Errorf("two binaries for platform %s", b.Platform)
		}
		layer := content.NewDescriptorFromBytes(api.MediaTypeAgentBinary, b.Data)
		layer.Annotations = map[string]string{ocispec.AnnotationTitle: b.Name}
		if err := p.store.Push(ctx, layer, bytes.NewReader(b.Data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return nil, err
		}
		// An image config naming the platform, not the empty one: image
		// tools (go-containerregistry's validate, crane) check a child's
		// platform against its config. No diff ids: the binary is not a
		// filesystem layer.
		config, err := json.Marshal(ocispec.Image{Platform: platform, RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{}}})
		if err != nil {
			return nil, err
		}
		configDesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, config)
		if err := p.store.Push(ctx, configDesc, bytes.NewReader(config)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return nil, err
		}
		m, err := oras.PackManifest(ctx, p.store, oras.PackManifestVersion1_1, api.ArtifactTypeAgent,
			oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}, ConfigDescriptor: &configDesc, ManifestAnnotations: annotations})
		if err != nil {
			return nil, fmt.Errorf("packing the binary for %s: %w", b.Platform, err)
		}
		m.Platform = &platform
		index.Manifests = append(index.Manifests, m)
		p.Layers[b.Platform] = layer
	}
	if err := p.pushRoot(ctx, ocispec.MediaTypeImageIndex, index); err != nil {
		return nil, err
	}
	return p, nil
}

// PackAttempt packs an attempt as an OCI artifact (the attempt's JSON its
// single layer), tagged with its UUID: its digest identifies it. The bytes
// are wire.AttemptArtifact's, the ones a device checks the binding against;
// created is fixed (the Unix epoch), so that the digest is a function of the
// attempt alone and its UUID stays bound to one digest.
func PackAttempt(ctx context.Context, a wire.Attempt) (*Packed, error) {
	if err := a.Verify(); err != nil {
		return nil, err
	}
	manifest, config, layer, _, err := wire.AttemptArtifact(a)
	if err != nil {
		return nil, err
	}
	p := &Packed{Tag: a.UUID, store: memory.New()}
	for _, b := range []struct {
		mediaType string
		data      []byte
	}{{api.MediaTypeAttempt, layer}, {api.MediaTypeOCIEmpty, config}} {
		if err := p.store.Push(ctx, content.NewDescriptorFromBytes(b.mediaType, b.data), bytes.NewReader(b.data)); err != nil {
			return nil, fmt.Errorf("packing the attempt of device %s: %w", a.DeviceID, err)
		}
	}
	p.Root = content.NewDescriptorFromBytes(api.MediaTypeOCIManifest, manifest)
	p.Root.ArtifactType = api.ArtifactTypeAttempt
	if err := p.store.Push(ctx, p.Root, bytes.NewReader(manifest)); err != nil {
		return nil, fmt.Errorf("packing the attempt of device %s: %w", a.DeviceID, err)
	}
	return p, p.store.Tag(ctx, p.Root, p.Tag)
}

func (p *Packed) pushRoot(ctx context.Context, mediaType string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.Root = content.NewDescriptorFromBytes(mediaType, b)
	if err := p.store.Push(ctx, p.Root, bytes.NewReader(b)); err != nil {
		return err
	}
	return p.store.Tag(ctx, p.Root, p.Tag)
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

// Put copies the packed artifact into repo under its tag (publish.Put: the
// immutable-tag push; other content there is publish.ErrImmutable).
func Put(ctx context.Context, repo store.Repository, p *Packed) (string, error) {
	return publish.Put(ctx, p.store, p.Root, repo, p.Tag)
}
