package archive

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"

	"github.com/solar-pipeline/solar/renderer/store"
)

// Repository is the repository name of an unpacked archive (a
// store.Store): a read-only view of its one version, with its
// signatures, over the blobs staged once each. A repository the archive
// does not hold is empty.
func (u *Unpacked) Repository(_ context.Context, name string) (store.Repository, error) {
	if r, ok := u.repos[name]; ok {
		return r, nil
	}
	return &repo{st: u.st}, nil
}

// Repositories lists the archive's repositories under prefix, sorted (a
// store.Lister).
func (u *Unpacked) Repositories(_ context.Context, prefix string) ([]string, error) {
	var out []string
	for _, v := range u.Versions {
		if strings.HasPrefix(v.Repository, prefix) {
			out = append(out, v.Repository)
		}
	}
	slices.Sort(out)
	return out, nil
}

// repo is one repository of an unpacked archive: it answers only for the
// blobs its version names, as a layout's repository would.
type repo struct {
	st      *staged
	version string
	desc    ocispec.Descriptor   // the version's manifest
	sigs    []ocispec.Descriptor // its signatures' manifests
	names   map[digest.Digest]ocispec.Descriptor
}

func newRepo(st *staged, v checked) *repo {
	r := &repo{st: st, version: v.Version.Version, desc: v.manifest, names: map[digest.Digest]ocispec.Descriptor{}}
	r.names[v.manifest.Digest] = v.manifest
	for _, d := range v.blobs {
		r.names[d.Digest] = d
	}
	for _, s := range v.sigs {
		r.sigs = append(r.sigs, s.desc)
		r.names[s.desc.Digest] = s.desc
		for _, d := range s.blobs {
			r.names[d.Digest] = d
		}
	}
	return r
}

func (r *repo) Fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	if _, ok := r.names[d.Digest]; !ok {
		return nil, fmt.Errorf("%s: %w", d.Digest, errdef.ErrNotFound)
	}
	return r.st.open(d.Digest)
}

func (r *repo) Exists(_ context.Context, d ocispec.Descriptor) (bool, error) {
	_, ok := r.names[d.Digest]
	return ok, nil
}

// Resolve takes the version or the digest of a manifest of the repository.
func (r *repo) Resolve(_ context.Context, ref string) (ocispec.Descriptor, error) {
	if r.version != "" && ref == r.version {
		return r.desc, nil
	}
	if d, ok := r.names[digest.Digest(ref)]; ok && d.MediaType == ocispec.MediaTypeImageManifest {
		return d, nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: %w", ref, errdef.ErrNotFound)
}

// Tags lists the version, if after last.
func (r *repo) Tags(_ context.Context, last string, fn func([]string) error) error {
	if r.version == "" || r.version <= last {
		return fn(nil)
	}
	return fn([]string{r.version})
}

// Predecessors lists the signatures of the version's manifest.
func (r *repo) Predecessors(_ context.Context, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	if r.version == "" || d.Digest != r.desc.Digest {
		return nil, nil
	}
	return slices.Clone(r.sigs), nil
}

func (r *repo) Push(context.Context, ocispec.Descriptor, io.Reader) error { return errReadOnly }

func (r *repo) Tag(context.Context, ocispec.Descriptor, string) error { return errReadOnly }
