package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"

	"github.com/solar-pipeline/solar/renderer/store"
)

// stage puts the artifact's blobs and manifest into a memory store, from
// which push uploads what the repository lacks.
func stage(ctx context.Context, art *Artifact) (*memory.Store, ocispec.Descriptor, error) {
	mem := memory.New()
	layers := make([]ocispec.Descriptor, len(art.Layers))
	for i, b := range append([]Blob{art.Config}, art.Layers...) {
		if err := mem.Push(ctx, b.Desc, bytes.NewReader(b.Data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return nil, ocispec.Descriptor{}, err
		}
		if i > 0 {
			layers[i-1] = b.Desc
		}
	}
	desc, err := oras.PackManifest(ctx, mem, oras.PackManifestVersion1_1, art.ArtifactType, oras.PackManifestOptions{
		ConfigDescriptor:    &art.Config.Desc,
		Layers:              layers,
		ManifestAnnotations: art.Annotations,
	})
	return mem, desc, err
}

// push uploads the blobs the repository lacks (all of them without checking
// when check is false) and then the manifest under the tag, which must be
// free.
func push(ctx context.Context, staged content.ReadOnlyStorage, repo store.Repository, manifest ocispec.Descriptor, tag string, check bool) error {
	b, err := upload(ctx, staged, repo, manifest, check)
	if err != nil {
		return err
	}
	// The tag must still be free: another writer may have taken it since the
	// versions were listed.
	if _, err := repo.Resolve(ctx, tag); err == nil {
		return errTaken
	} else if !store.IsNotFound(err) {
		return err
	}
	return tagManifest(ctx, repo, manifest, b, tag)
}

// upload uploads the blobs of manifest the repository lacks (all of them
// without checking when check is false) and returns the manifest's bytes.
func upload(ctx context.Context, staged content.ReadOnlyStorage, repo store.Repository, manifest ocispec.Descriptor, check bool) ([]byte, error) {
	b, err := content.FetchAll(ctx, staged, manifest)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		if check {
			exists, err := repo.Exists(ctx, d)
			if err != nil {
				return nil, err
			}
			if exists {
				continue
			}
		}
		data, err := content.FetchAll(ctx, staged, d)
		if err != nil {
			return nil, err
		}
		// A bytes.Reader: a request the registry failed can be sent again.
		err = repo.Push(ctx, d, bytes.NewReader(data))
		if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return nil, err
		}
	}
	return b, nil
}

// tagManifest pushes the manifest b (of descriptor manifest) under tag.
func tagManifest(ctx context.Context, repo store.Repository, manifest ocispec.Descriptor, b []byte, tag string) error {
	// A registry takes the manifest and its tag in one request.
	if rp, ok := repo.(registry.ReferencePusher); ok {
		return rp.PushReference(ctx, manifest, bytes.NewReader(b), tag)
	}
	exists, err := repo.Exists(ctx, manifest)
	if err != nil {
		return err
	}
	if !exists {
		if err := repo.Push(ctx, manifest, bytes.NewReader(b)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return err
		}
	}
	return repo.Tag(ctx, manifest, tag)
}
