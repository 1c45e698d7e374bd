package store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"oras.land/oras-go/v2/content"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/solar-pipeline/solar/api"
)

type layoutRepo struct {
	l *Layout
	s *layoutStore
}

func (r *layoutRepo) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	return r.s.backend.Fetch(ctx, d)
}

func (r *layoutRepo) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	return r.s.backend.Exists(ctx, d)
}

// Push writes a blob or manifest; a signature's manifest (which names its
// subject) is kept in the index untagged, as oras' layouts keep referrers.
func (r *layoutRepo) Push(ctx context.Context, d ocispec.Descriptor, rd io.Reader) error {
	if err := r.write(ctx); err != nil {
		return err
	}
	if err := r.s.store.Push(ctx, d, rd); err != nil {
		return err
	}
	if d.ArtifactType == api.MediaTypeSigstoreBundle && d.MediaType == ocispec.MediaTypeImageManifest {
		r.l.mu.Lock()
		defer r.l.mu.Unlock()
		if !slices.ContainsFunc(r.s.referrers, func(x ocispec.Descriptor) bool { return x.Digest == d.Digest }) {
			r.s.referrers = append(r.s.referrers, ocispec.Descriptor{MediaType: d.MediaType, ArtifactType: d.ArtifactType, Digest: d.Digest, Size: d.Size})
			r.s.changed(r.l)
		}
	}
	return nil
}

// Predecessors lists the manifests that name d as their subject (its
// signatures).
func (r *layoutRepo) Predecessors(ctx context.Context, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	r.l.mu.Lock()
	refs := slices.Clone(r.s.referrers)
	r.l.mu.Unlock()
	var out []ocispec.Descriptor
	for _, ref := range refs {
		m, err := ReadManifest(ctx, r.s.backend, ref)
		if err != nil {
			return nil, err
		}
		if m.Subject != nil && m.Subject.Digest == d.Digest {
			out = append(out, ref)
		}
	}
	return out, nil
}

// write makes the repository writable: a dry run's is not; a new one is
// created now.
func (r *layoutRepo) write(ctx context.Context) error {
	if r.l.readOnly {
		return errReadOnly
	}
	return r.s.writable(ctx)
}

// Resolve takes a tag (a version) or a digest.
func (r *layoutRepo) Resolve(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	return r.s.backend.Resolve(ctx, ref)
}

func (r *layoutRepo) Tag(ctx context.Context, d ocispec.Descriptor, tag string) error {
	if err := r.write(ctx); err != nil {
		return err
	}
	if err := r.s.store.Tag(ctx, d, tag); err != nil {
		return err
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if !slices.Contains(r.s.tags, tag) { // a tag moved (an index's) is listed once
		r.s.tags = append(r.s.tags, tag)
	}
	r.s.changed(r.l)
	return nil
}

// changed marks the repository's index to be saved, in the order of the
// first change. Layout.mu is held.
func (s *layoutStore) changed(l *Layout) {
	if !s.dirty {
		l.tagged++
		s.order = l.tagged
	}
	s.dirty = true
}

// ReadManifest reads an image manifest of a store, at most 4 MiB: what a
// layout reads of its signatures and garbage collection of its versions.
func ReadManifest(ctx context.Context, st content.Fetcher, d ocispec.Descriptor) (*ocispec.Manifest, error) {
	if d.Size > maxManifest {
		return nil, fmt.Errorf("manifest %s is %d bytes: too large", d.Digest, d.Size)
	}
	b, err := content.FetchAll(ctx, st, d)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", d.Digest, err)
	}
	return &m, nil
}

// maxManifest bounds a manifest read.
const maxManifest = 4 << 20

// Tags lists the repository's tags after last, in ascending order, in one call.
func (r *layoutRepo) Tags(_ context.Context, last string, fn func([]string) error) error {
	r.l.mu.Lock()
	var tags []string
	for _, t := range r.s.tags {
		if t > last {
			tags = append(tags, t)
		}
	}
	r.l.mu.Unlock()
	slices.Sort(tags)
	return fn(tags)
}
