package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
)

// layoutView is a repository's layout as index.json names it, read without
// oras' store: a blob is read when asked for. Opening oras' store reads every
// manifest the repository ever had, and keeps them in memory; a run that
// writes nothing to a repository needs only its latest version's. A
// repository is opened with oras only to be written (layoutStore.writable).
type layoutView struct {
	dir       string
	byRef     map[string]ocispec.Descriptor // tag -> manifest
	byDigest  map[digest.Digest]ocispec.Descriptor
	tagsByRef []string
}

// newLayoutView views the repository in dir whose index is index (nil: an
// empty repository, not on disk yet).
func newLayoutView(dir string, index *ocispec.Index) *layoutView {
	v := &layoutView{dir: dir, byRef: map[string]ocispec.Descriptor{}, byDigest: map[digest.Digest]ocispec.Descriptor{}}
	if index == nil {
		return v
	}
	for _, d := range index.Manifests {
		v.byDigest[d.Digest] = d
		if ref := d.Annotations[ocispec.AnnotationRefName]; ref != "" {
			v.byRef[ref] = d
			v.tagsByRef = append(v.tagsByRef, ref)
		}
	}
	slices.Sort(v.tagsByRef)
	return v
}

func (v *layoutView) blob(d ocispec.Descriptor) (string, error) {
	if err := d.Digest.Validate(); err != nil {
		return "", fmt.Errorf("%s: %w", d.Digest, err)
	}
	return filepath.Join(v.dir, ocispec.ImageBlobsDir, d.Digest.Algorithm().String(), d.Digest.Encoded()), nil
}

func (v *layoutView) Fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	p, err := v.blob(d)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", d.Digest, errdef.ErrNotFound)
	}
	return f, err
}

func (v *layoutView) Exists(_ context.Context, d ocispec.Descriptor) (bool, error) {
	p, err := v.blob(d)
	if err != nil {
		return false, err
	}
	_, err = os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Resolve takes a tag or the digest of a manifest the index names.
func (v *layoutView) Resolve(_ context.Context, ref string) (ocispec.Descriptor, error) {
	if d, ok := v.byRef[ref]; ok {
		return d, nil
	}
	if d, ok := v.byDigest[digest.Digest(ref)]; ok {
		return d, nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: %w", ref, errdef.ErrNotFound)
}

// Tags gives the tags after last, in ascending order, in one call.
func (v *layoutView) Tags(_ context.Context, last string, fn func([]string) error) error {
	i, _ := slices.BinarySearch(v.tagsByRef, last)
	for i < len(v.tagsByRef) && v.tagsByRef[i] <= last {
		i++
	}
	return fn(v.tagsByRef[i:])
}
