package publish

import (
	"bytes"
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
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry"
)

// layoutBackend is what both a writable and a read-only OCI layout offer.
type layoutBackend interface {
	content.ReadOnlyStorage
	content.Resolver
	registry.TagLister
}

// Layout is an OCI image layout holding many repositories: a manifest of
// repository R at version V is tagged "R:V" (org.opencontainers.image.ref.name).
// Blobs are shared by all repositories. The layout is the state of renders:
// it is locked while open (Close unlocks), and Save writes index.json whole
// or not at all.
type Layout struct {
	dir     string
	backend layoutBackend
	store   *oci.Store // nil when read-only
	lock    *os.File

	mu    sync.Mutex
	tags  map[string][]string // repository → versions
	dirty bool
}

// LayoutOptions say how to open a layout. The zero value opens it writable
// and waits for its lock as long as the context allows.
type LayoutOptions struct {
	// ReadOnly opens it for a dry run: a missing layout is empty, nothing is
	// created or written, and the lock is shared.
	ReadOnly bool
	// LockTimeout bounds the wait for another solar's lock; 0 waits as long
	// as the context allows.
	LockTimeout time.Duration
	// Waiting, when set, is called once if the lock is held by another.
	Waiting func()
}

// errReadOnly is what a dry run gets if it ever tried to write.
var errReadOnly = errors.New("the OCI layout is open read-only")

// lockFile is the file that solar runs lock in a layout.
const lockFile = ".solar.lock"

// OpenLayout opens the OCI image layout in dir. A writable layout is created
// when missing (0700: only its owner reads the charts, and their tokens); a
// folder that holds something else is refused. index.json and oci-layout must
// be regular files: symlinks inside the layout are not followed.
func OpenLayout(ctx context.Context, dir string, opts LayoutOptions) (*Layout, error) {
	l := &Layout{dir: dir, tags: map[string][]string{}}
	exists, err := checkLayoutDir(dir)
	if err != nil {
		return nil, err
	}
	if !opts.ReadOnly && !exists {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating OCI layout %s: %w", dir, err)
		}
		exists = true
	}
	if exists {
		if l.lock, err = lockLayout(ctx, dir, !opts.ReadOnly, opts); err != nil {
			return nil, err
		}
	}
	if err := l.open(ctx, exists, opts.ReadOnly); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *Layout) open(ctx context.Context, exists, readOnly bool) error {
	if !readOnly {
		s, err := oci.NewWithContext(ctx, l.dir)
		if err != nil {
			return fmt.Errorf("opening OCI layout %s: %w", l.dir, err)
		}
		// One index.json write at the end (Save), not one per tag.
		s.AutoSaveIndex = false
		l.backend, l.store = s, s
	} else {
		var fsys fs.FS = os.DirFS(l.dir)
		if !exists {
			fsys = fstest.MapFS{
				ocispec.ImageLayoutFile: {Data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
				ocispec.ImageIndexFile:  {Data: []byte(`{"schemaVersion":2,"manifests":[]}`)},
			}
		}
		s, err := oci.NewFromFS(ctx, fsys)
		if err != nil {
			return fmt.Errorf("opening OCI layout %s: %w", l.dir, err)
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
		return fmt.Errorf("listing tags of OCI layout %s: %w", l.dir, err)
	}
	return nil
}

// checkLayoutDir says whether dir exists as a layout, refusing what is not
// one: a non-empty folder without oci-layout, symlinked or non-regular
// index.json and oci-layout, an index.json that is not one JSON document.
func checkLayoutDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("opening OCI layout %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return false, nil
	}
	for _, name := range []string{ocispec.ImageLayoutFile, ocispec.ImageIndexFile} {
		info, err := os.Lstat(filepath.Join(dir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist) && name == ocispec.ImageLayoutFile:
			return false, fmt.Errorf("%s is not empty and not an OCI image layout (no %s): solar writes only into its own layouts", dir, name)
		case errors.Is(err, fs.ErrNotExist):
			continue // a layout killed before its first index: oras starts one
		case err != nil:
			return false, err
		case !info.Mode().IsRegular():
			return false, fmt.Errorf("OCI layout %s: %s is not a regular file (%s): not followed", dir, name, info.Mode().Type())
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ocispec.ImageIndexFile))
	if err == nil {
		var index ocispec.Index
		if err := json.Unmarshal(b, &index); err != nil {
			return false, fmt.Errorf("OCI layout %s: index.json is damaged: %w", dir, err)
		}
	}
	return true, nil
}

// cutRef splits "alpha/bootstrap-edge-1:0.0.1" into repository and tag.
func cutRef(ref string) (repo, tag string, ok bool) {
	i := strings.LastIndexByte(ref, ':')
	if i <= 0 || !strings.Contains(ref[:i], "/") {
		return "", "", false
	}
	return ref[:i], ref[i+1:], true
}

// Save writes index.json if anything was tagged: every tagged manifest,
// sorted by reference so that the same layout gives the same bytes, written
// to a temporary file that is synced and renamed over the old one. A kill at
// any moment leaves the old index or the new one.
func (l *Layout) Save(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.store == nil || !l.dirty {
		return nil
	}
	index := ocispec.Index{Manifests: []ocispec.Descriptor{}}
	index.SchemaVersion = 2
	index.MediaType = ocispec.MediaTypeImageIndex
	for repo, tags := range l.tags {
		for _, tag := range tags {
			ref := repo + ":" + tag
			desc, err := l.store.Resolve(ctx, ref)
			if err != nil {
				return fmt.Errorf("saving OCI layout index: %s: %w", ref, err)
			}
			desc.Annotations = map[string]string{ocispec.AnnotationRefName: ref}
			index.Manifests = append(index.Manifests, desc)
		}
	}
	slices.SortFunc(index.Manifests, func(a, b ocispec.Descriptor) int {
		return cmp.Or(cmp.Compare(a.Annotations[ocispec.AnnotationRefName], b.Annotations[ocispec.AnnotationRefName]),
			cmp.Compare(a.Digest, b.Digest))
	})
	b, err := json.Marshal(index)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(l.dir, ocispec.ImageIndexFile), b); err != nil {
		return fmt.Errorf("saving OCI layout index: %w", err)
	}
	l.dirty = false
	return nil
}

// writeAtomic writes a file whole or not at all: a temporary file in the same
// folder, synced, renamed over the name, and the folder synced.
func writeAtomic(name string, data []byte) error {
	dir := filepath.Dir(name)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a rename: nothing there
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Close unlocks the layout.
func (l *Layout) Close() error {
	if l.lock == nil {
		return nil
	}
	err := l.lock.Close() // closing the file releases its lock
	l.lock = nil
	return err
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

// Repositories lists the layout's repositories under prefix.
func (l *Layout) Repositories(_ context.Context, prefix string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for repo := range l.tags {
		if strings.HasPrefix(repo, prefix) {
			out = append(out, repo)
		}
	}
	slices.Sort(out)
	return out, nil
}
