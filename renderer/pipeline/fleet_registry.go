package pipeline

import (
	"bytes"
	"context"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"

	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// The fleet's registry side: the planner (package fleet) reads and writes
// nothing, so the agent indexes it resolves against are read here, and the
// artifacts it packs are put here.

// readAgents reads the agent index of every DeviceUpgrade's spec.artifact
// in set (fleet.Artifacts) from store: what fleet.Resolve resolves against.
// An index that cannot be read is its Agent's Err, not the call's.
func readAgents(ctx context.Context, s *Store, set *model.Set) map[string]fleet.Agent {
	out := map[string]fleet.Agent{}
	for _, artifact := range fleet.Artifacts(set) {
		a, err := readAgent(ctx, s, artifact)
		if err != nil {
			a = fleet.Agent{Err: err}
		}
		out[artifact] = a
	}
	return out
}

// readAgent reads the agent index artifact (REPO:VERSION or REPO@DIGEST): the
// binary layer of each platform; a device downloads a blob of it from its
// repository's BlobURL + digest.
func readAgent(ctx context.Context, s *Store, artifact string) (fleet.Agent, error) {
	repo, ref, err := fleet.SplitArtifact(artifact)
	if err != nil {
		return fleet.Agent{}, err
	}
	r, err := s.Repository(ctx, repo)
	if err != nil {
		return fleet.Agent{}, err
	}
	desc, b, err := fetch(ctx, r, ref)
	if err != nil {
		return fleet.Agent{}, err
	}
	index, err := fleet.AgentIndex(ref, desc.MediaType, b)
	if err != nil {
		return fleet.Agent{}, err
	}
	layers := map[string]ocispec.Descriptor{}
	for _, m := range index.Manifests {
		_, mb, err := fetch(ctx, r, m.Digest.String())
		if err != nil {
			return fleet.Agent{}, err
		}
		if layers[fleet.PlatformString(m.Platform)], err = fleet.AgentLayer(ref, m, mb); err != nil {
			return fleet.Agent{}, err
		}
	}
	return fleet.Agent{Repository: repo, BlobURL: s.BlobURL(repo), Layers: layers}, nil
}

// fetch reads ref of repo: its descriptor and its bytes.
func fetch(ctx context.Context, repo store.Repository, ref string) (ocispec.Descriptor, []byte, error) {
	desc, err := repo.Resolve(ctx, ref)
	if err != nil {
		return desc, nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return desc, nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	return desc, b, nil
}

// putPacked copies a packed artifact into repo under its tag (publish.Put:
// the immutable-tag push; other content there is publish.ErrImmutable).
func putPacked(ctx context.Context, repo store.Repository, p *fleet.Packed) (string, error) {
	src := memory.New()
	for _, b := range p.Blobs {
		if err := src.Push(ctx, b.Descriptor, bytes.NewReader(b.Data)); err != nil {
			return "", err
		}
	}
	return publish.Put(ctx, src, p.Root, repo, p.Tag)
}

// putAttempt stores an attempt's artifact in repository of s
// (fleetkv.PutAttempt).
func (s *Store) putAttempt(ctx context.Context, repository string, p *fleet.Packed) error {
	repo, err := s.Repository(ctx, repository)
	if err != nil {
		return err
	}
	_, err = putPacked(ctx, repo, p)
	return err
}
