package publish

import (
	"context"
	"io"
	"slices"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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

func (r *layoutRepo) Push(ctx context.Context, d ocispec.Descriptor, rd io.Reader) error {
	if err := r.write(ctx); err != nil {
		return err
	}
	return r.s.store.Push(ctx, d, rd)
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
	r.s.tags = append(r.s.tags, tag)
	if !r.s.dirty {
		r.l.tagged++
		r.s.order = r.l.tagged
	}
	r.s.dirty = true
	return nil
}

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
