package imagebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// WriteLayout writes the result as a new OCI image layout in dir (replacing
// what dir held): the index, tagged ref (as org.opencontainers.image.ref.name),
// and per platform the SBOM as an OCI 1.1 referrer of that platform's image
// (artifactType api.MediaTypeSBOM), listed in the layout's index.json, where
// `oras discover --oci-layout` finds it. It returns the index's descriptor.
func WriteLayout(dir, ref string, res *Result) (v1.Descriptor, error) {
	if err := os.RemoveAll(dir); err != nil {
		return v1.Descriptor{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("writing the layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(res.Index, layout.WithAnnotations(
		map[string]string{ocispec.AnnotationRefName: ref})); err != nil {
		return v1.Descriptor{}, fmt.Errorf("writing the index to %s: %w", dir, err)
	}
	for _, img := range res.Images {
		if err := writeSBOM(p, img); err != nil {
			return v1.Descriptor{}, fmt.Errorf("writing the SBOM of %s to %s: %w",
				platformString(img.Platform), dir, err)
		}
	}
	desc, err := partial.Descriptor(res.Index)
	if err != nil {
		return v1.Descriptor{}, err
	}
	return *desc, nil
}

// writeSBOM writes the SBOM as an artifact manifest whose subject is the
// image: an empty config, one layer, no time of its own.
func writeSBOM(p layout.Path, img Image) error {
	subject, err := partial.Descriptor(img.Image)
	if err != nil {
		return err
	}
	sbom, err := blob(p, api.MediaTypeSBOM, img.SBOM)
	if err != nil {
		return err
	}
	cfg, err := blob(p, ocispec.MediaTypeEmptyJSON, ocispec.DescriptorEmptyJSON.Data)
	if err != nil {
		return err
	}
	m := ocispec.Manifest{
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: api.MediaTypeSBOM,
		Config:       cfg,
		Layers:       []ocispec.Descriptor{sbom},
		Subject: &ocispec.Descriptor{MediaType: string(subject.MediaType),
			Digest: ocispecDigest(subject.Digest), Size: subject.Size},
	}
	m.SchemaVersion = 2
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	md, err := blob(p, ocispec.MediaTypeImageManifest, raw)
	if err != nil {
		return err
	}
	return p.AppendDescriptor(v1.Descriptor{MediaType: types.OCIManifestSchema1,
		Digest: v1.Hash{Algorithm: "sha256", Hex: md.Digest.Encoded()}, Size: md.Size,
		ArtifactType: api.MediaTypeSBOM})
}

// blob writes b to the layout and returns its descriptor.
func blob(p layout.Path, mediaType string, b []byte) (ocispec.Descriptor, error) {
	h, size, err := v1.SHA256(bytes.NewReader(b))
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if err := p.WriteBlob(h, io.NopCloser(bytes.NewReader(b))); err != nil {
		return ocispec.Descriptor{}, err
	}
	return ocispec.Descriptor{MediaType: mediaType, Digest: ocispecDigest(h), Size: size}, nil
}

func ocispecDigest(h v1.Hash) digest.Digest {
	return digest.NewDigestFromEncoded(digest.Algorithm(h.Algorithm), h.Hex)
}

// Publish publishes the image WriteLayout wrote to dir (desc, its index)
// into repository of dst with publish.PublishImage: versioned by content,
// its SBOMs along, signed with opts.SigningKey.
func Publish(ctx context.Context, dir string, desc v1.Descriptor, dst store.Store, repository string, opts publish.Options) (publish.Result, error) {
	src, err := oci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		return publish.Result{}, fmt.Errorf("reading %s: %w", dir, err)
	}
	root := ocispec.Descriptor{MediaType: string(desc.MediaType), Digest: ocispecDigest(desc.Digest), Size: desc.Size}
	return publish.PublishImage(ctx, src, root, dst, repository, opts)
}
