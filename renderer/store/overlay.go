package store

import (
	"context"
	"errors"
	"io"
	"slices"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// Overlay is a store that reads from base (a registry) and writes into top
// (an OCI layout): render --registry computes versions against the registry
// and puts the charts into a layout, for review and a later push. What top
// holds wins: a version written in this run is read back from it.
func Overlay(base Store, top *Layout) Store {
	return &overlay{base: base, top: top}
}

type overlay struct {
	base Store
	top  *Layout
}

// Top is the layout the overlay writes into.
func (o *overlay) Top() *Layout { return o.top }

func (o *overlay) Repository(ctx context.Context, name string) (Repository, error) {
	b, err := o.base.Repository(ctx, name)
	if err != nil {
		return nil, err
	}
	t, err := o.top.Repository(ctx, name)
	if err != nil {
		return nil, err
	}
	return &overlayRepo{base: b, top: t}, nil
}

// overlayRepo reads from top, then base; writes go to top. Exists asks top
// only, so that every blob of a version written lands in the layout.
type overlayRepo struct {
	base, top Repository
}

func (r *overlayRepo) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	if ok, err := r.top.Exists(ctx, d); err == nil && ok {
		return r.top.Fetch(ctx, d)
	}
	return r.base.Fetch(ctx, d)
}

func (r *overlayRepo) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	return r.top.Exists(ctx, d)
}

func (r *overlayRepo) Push(ctx context.Context, d ocispec.Descriptor, rd io.Reader) error {
	return r.top.Push(ctx, d, rd)
}

func (r *overlayRepo) Resolve(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	d, err := r.top.Resolve(ctx, ref)
	if err == nil || !IsNotFound(err) {
		return d, err
	}
	return r.base.Resolve(ctx, ref)
}

// SaveLast tells top (LastSaver): the base is a registry, which saves
// nothing.
func (r *overlayRepo) SaveLast() {
	if t, ok := r.top.(LastSaver); ok {
		t.SaveLast()
	}
}

func (r *overlayRepo) Tag(ctx context.Context, d ocispec.Descriptor, tag string) error {
	return r.top.Tag(ctx, d, tag)
}

// Predecessors are those of both (a chart's signatures in the layout and in
// the registry).
func (r *overlayRepo) Predecessors(ctx context.Context, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	var out []ocispec.Descriptor
	for _, s := range []Repository{r.top, r.base} {
		g, ok := s.(content.ReadOnlyGraphStorage)
		if !ok {
			continue
		}
		p, err := g.Predecessors(ctx, d)
		if err != nil && !IsNotFound(err) {
			return nil, err
		}
		out = append(out, p...)
	}
	return out, nil
}

// Tags are those of both, in ascending order.
func (r *overlayRepo) Tags(ctx context.Context, last string, fn func([]string) error) error {
	var tags []string
	collect := func(t []string) error { tags = append(tags, t...); return nil }
	if err := r.base.Tags(ctx, last, collect); err != nil && !IsNotFound(err) {
		return err
	}
	if err := r.top.Tags(ctx, last, collect); err != nil && !errors.Is(err, errReadOnly) {
		return err
	}
	slices.Sort(tags)
	return fn(slices.Compact(tags))
}
