package publish

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing/fstest"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry"
)

// Repository is one OCI repository: an oras.Target that lists its tags.
type Repository interface {
	oras.Target
	registry.TagLister
}

// Store opens repositories by name, such as "alpha/bootstrap-edge-1".
type Store interface {
	Repository(ctx context.Context, name string) (Repository, error)
}

// BlobScoper is a Repository that says whether its blobs are its own (a
// registry's) or shared with the store's other repositories (a layout's).
// Publish does not ask whether each blob of a repository's first version is
// there when the repository's blobs are its own.
type BlobScoper interface {
	BlobsPerRepository() bool
}

// layoutBackend is what both a writable and a read-only OCI layout offer.
type layoutBackend interface {
	content.ReadOnlyStorage
	content.Resolver
	registry.TagLister
}

// Layout is an OCI image layout holding many repositories: a manifest of
// repository R at version V is tagged "R:V" (org.opencontainers.image.ref.name).
// Blobs are shared by all repositories. Call Save after publishing.
type Layout struct {
	dir     string
	backend layoutBackend
	store   *oci.Store // nil when read-only

	mu    sync.Mutex
	tags  map[string][]string // repository → versions
	dirty bool
}

// errReadOnly is what a dry run gets if it ever tried to write.
var errReadOnly = errors.New("the OCI layout is open read-only")

// OpenLayout opens the OCI image layout in dir. A writable layout is created
// when missing; a read-only one (for a dry run) that is missing is empty, and
// nothing is created.
func OpenLayout(ctx context.Context, dir string, readOnly bool) (*Layout, error) {
	l := &Layout{dir: dir, tags: map[string][]string{}}
	switch {
	case !readOnly:
		s, err := oci.NewWithContext(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("opening OCI layout %s: %w", dir, err)
		}
		// One index.json write at the end, not one per tag.
		s.AutoSaveIndex = false
		l.backend, l.store = s, s
	default:
		var fsys fs.FS = os.DirFS(dir)
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			fsys = fstest.MapFS{
				ocispec.ImageLayoutFile: {Data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
				"index.json":            {Data: []byte(`{"schemaVersion":2,"manifests":[]}`)},
			}
		}
		s, err := oci.NewFromFS(ctx, fsys)
		if err != nil {
			return nil, fmt.Errorf("opening OCI layout %s: %w", dir, err)
		}
		l.backend = s
	}
	err := l.backend.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			if repo, version, ok := cutRef(t); ok {
				l.tags[repo] = append(l.tags[repo], version)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing tags of OCI layout %s: %w", dir, err)
	}
	return l, nil
}

// cutRef splits "alpha/bootstrap-edge-1:0.0.1" into repository and tag.
func cutRef(ref string) (repo, tag string, ok bool) {
	i := strings.LastIndexByte(ref, ':')
	if i <= 0 || !strings.Contains(ref[:i], "/") {
		return "", "", false
	}
	return ref[:i], ref[i+1:], true
}

// Save writes index.json if anything was tagged, its manifests sorted by
// reference so that the same layout gives the same bytes.
func (l *Layout) Save() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.store == nil || !l.dirty {
		return nil
	}
	if err := l.store.SaveIndex(); err != nil {
		return fmt.Errorf("saving OCI layout index: %w", err)
	}
	// oras-go writes the manifests in map order.
	path := filepath.Join(l.dir, ocispec.ImageIndexFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var index ocispec.Index
	if err := json.Unmarshal(b, &index); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	slices.SortFunc(index.Manifests, func(a, b ocispec.Descriptor) int {
		return cmp.Or(cmp.Compare(a.Annotations[ocispec.AnnotationRefName], b.Annotations[ocispec.AnnotationRefName]),
			cmp.Compare(a.Digest, b.Digest))
	})
	if b, err = json.Marshal(index); err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("saving OCI layout index: %w", err)
	}
	l.dirty = false
	return nil
}

// Repository returns the view of one repository.
func (l *Layout) Repository(_ context.Context, name string) (Repository, error) {
	return &layoutRepo{l: l, name: name}, nil
}

type layoutRepo struct {
	l    *Layout
	name string
}

func (r *layoutRepo) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	return r.l.backend.Fetch(ctx, d)
}

func (r *layoutRepo) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	return r.l.backend.Exists(ctx, d)
}

func (r *layoutRepo) Push(ctx context.Context, d ocispec.Descriptor, rd io.Reader) error {
	if r.l.store == nil {
		return errReadOnly
	}
	return r.l.store.Push(ctx, d, rd)
}

// Resolve takes a tag of this repository or a digest.
func (r *layoutRepo) Resolve(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	if strings.Contains(ref, ":") { // a digest
		return r.l.backend.Resolve(ctx, ref)
	}
	return r.l.backend.Resolve(ctx, r.name+":"+ref)
}

func (r *layoutRepo) Tag(ctx context.Context, d ocispec.Descriptor, tag string) error {
	if r.l.store == nil {
		return errReadOnly
	}
	if err := r.l.store.Tag(ctx, d, r.name+":"+tag); err != nil {
		return err
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.l.tags[r.name] = append(r.l.tags[r.name], tag)
	r.l.dirty = true
	return nil
}

// Tags lists the repository's tags after last, in ascending order, in one call.
func (r *layoutRepo) Tags(_ context.Context, last string, fn func([]string) error) error {
	r.l.mu.Lock()
	var tags []string
	for _, t := range r.l.tags[r.name] {
		if t > last {
			tags = append(tags, t)
		}
	}
	r.l.mu.Unlock()
	slices.Sort(tags)
	return fn(tags)
}
