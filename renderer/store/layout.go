package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/solar-pipeline/solar/api"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry"
)

// Layout is a folder of OCI image layouts, one per repository: out/<repository>/
// is a standard OCI image layout whose tags are the versions, as oras
// (--oci-layout out/alpha/bootstrap-edge-1:0.0.1) and go-containerregistry read
// it. The folder holds MarkerFile; it is locked while open (Close unlocks), and
// Save writes each index.json whole or not at all.
type Layout struct {
	dir      string
	readOnly bool
	lock     *os.File

	mu    sync.Mutex
	known []string // repositories found when opened
	repos map[string]*layoutStore
	// tagged counts the repositories tagged so far: Save writes them in that
	// order, release charts (published first) before the bootstrap charts
	// naming them, so a kill while saving leaves no bootstrap naming a
	// version whose index was not written.
	tagged int
}

// layoutStore is one repository's OCI image layout. Layout.mu guards tags,
// dirty, order and last; mu guards making it writable; ready is closed once it is
// opened (err says how).
type layoutStore struct {
	dir     string
	backend layoutBackend
	store   *oci.Store // nil until written: backend is then a layoutView
	tags    []string
	// referrers are the untagged manifests of the index that name a
	// subject: the versions' signatures.
	referrers []ocispec.Descriptor
	dirty     bool
	order     int  // when it was first tagged in this run
	last      bool // saved after the others (SaveLast)

	mu    sync.Mutex
	ready chan struct{}
	err   error
}

// layoutBackend is what both a writable and a read-only OCI layout offer.
type layoutBackend interface {
	content.ReadOnlyStorage
	content.Resolver
	registry.TagLister
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
	// MustExist refuses a missing layout instead of taking it as empty (or
	// creating it): what verifies or collects a layout has nothing to do in
	// one that is not there, a mistyped --out say.
	MustExist bool
}

// MarkerFile marks a folder as a solar layout; lockFile is what runs lock.
const (
	MarkerFile = ".solar-layout"
	lockFile   = ".solar.lock"
)

// OpenLayout opens the layout in dir. A writable one is created when missing
// (0700: only its owner reads the charts, and their tokens); a folder that
// holds something else is refused, and no symlink inside is followed.
func OpenLayout(ctx context.Context, dir string, opts LayoutOptions) (*Layout, error) {
	l := &Layout{dir: dir, readOnly: opts.ReadOnly, repos: map[string]*layoutStore{}}
	exists, err := checkLayoutDir(dir)
	if err != nil {
		return nil, err
	}
	if !exists && opts.MustExist {
		return nil, fmt.Errorf("%s: %w", dir, ErrNoLayout)
	}
	if opts.ReadOnly && !exists {
		return l, nil
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating OCI layout %s: %w", dir, err)
		}
	}
	// Locked before the marker is written: two runs creating one layout
	// create it once.
	if l.lock, err = lockLayout(ctx, dir, !opts.ReadOnly, opts); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(filepath.Join(dir, MarkerFile)); errors.Is(err, fs.ErrNotExist) && !opts.ReadOnly {
		if err := writeAtomic(filepath.Join(dir, MarkerFile), []byte(`{"layout":"one OCI image layout per repository"}`+"\n")); err != nil {
			l.Close()
			return nil, fmt.Errorf("creating OCI layout %s: %w", dir, err)
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == dir {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if _, err := os.Lstat(filepath.Join(p, ocispec.ImageLayoutFile)); err == nil {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			l.known = append(l.known, filepath.ToSlash(rel))
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("opening OCI layout %s: %w", dir, err)
	}
	slices.Sort(l.known)
	return l, nil
}

// checkLayoutDir says whether dir exists as a solar layout; a folder that
// holds something else is refused.
func checkLayoutDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("opening OCI layout %s: %w", dir, err)
	}
	// What another run creating the layout has put there so far.
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool {
		return e.Name() == lockFile || strings.HasPrefix(e.Name(), "."+MarkerFile+".")
	})
	if len(entries) == 0 {
		return false, nil
	}
	info, err := os.Lstat(filepath.Join(dir, MarkerFile))
	switch {
	case err == nil && info.Mode().IsRegular():
		return true, nil
	case err == nil:
		return false, fmt.Errorf("OCI layout %s: %s is not a regular file (%s): not followed", dir, MarkerFile, info.Mode().Type())
	}
	if _, err := os.Lstat(filepath.Join(dir, ocispec.ImageLayoutFile)); err == nil {
		return false, fmt.Errorf("%s is one OCI image layout for all repositories, as older solar versions wrote: render into a new folder", dir)
	}
	return false, fmt.Errorf("%s is not empty and not a solar layout (no %s): solar writes only into its own layouts", dir, MarkerFile)
}

// open opens the layout of one repository (a missing one is empty; written,
// it is created). Repositories are opened in parallel: only the map of them
// is under the layout's lock, not their files.
func (l *Layout) open(ctx context.Context, name string) (*layoutStore, error) {
	if !filepath.IsLocal(filepath.FromSlash(name)) || path.Clean(name) != name {
		// Not clean: a/../b would be b's repository under another name.
		return nil, fmt.Errorf("repository name %q leaves the layout or is not clean", name)
	}
	l.mu.Lock()
	s, ok := l.repos[name]
	if !ok {
		s = &layoutStore{dir: filepath.Join(l.dir, filepath.FromSlash(name)), ready: make(chan struct{})}
		l.repos[name] = s
	}
	l.mu.Unlock()
	if ok {
		<-s.ready
		return s, s.err
	}
	s.err = s.load(ctx)
	close(s.ready)
	return s, s.err
}

// load opens the repository's layout for the first time, as a view of what
// its index names: writing opens it with oras (writable).
func (s *layoutStore) load(ctx context.Context) error {
	index, err := checkRepoLayout(s.dir)
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", s.dir, err)
	}
	s.backend = newLayoutView(s.dir, index)
	if index != nil {
		for _, d := range index.Manifests {
			if d.Annotations[ocispec.AnnotationRefName] == "" && d.ArtifactType == api.MediaTypeSigstoreBundle {
				s.referrers = append(s.referrers, d)
			}
		}
	}
	err = s.backend.Tags(ctx, "", func(tags []string) error {
		s.tags = append(s.tags, tags...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing tags of OCI layout %s: %w", s.dir, err)
	}
	return nil
}

// writable opens (and creates, the first time something is written) the
// repository's layout for writing.
func (s *layoutStore) writable(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store != nil {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	// oras writes the files of a new layout in place: written here first,
	// whole, a kill cannot leave them empty.
	// index.json first: a folder with oci-layout is a repository to readers.
	for _, f := range []struct{ name, data string }{
		{ocispec.ImageIndexFile, `{"schemaVersion":2,"mediaType":"` + ocispec.MediaTypeImageIndex + `","manifests":[]}`},
		{ocispec.ImageLayoutFile, `{"imageLayoutVersion":"1.0.0"}`},
	} {
		p := filepath.Join(s.dir, f.name)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			if err := writeAtomic(p, []byte(f.data)); err != nil {
				return err
			}
		}
	}
	st, err := oci.NewWithContext(ctx, s.dir)
	if err != nil {
		return fmt.Errorf("opening OCI layout %s: %w", s.dir, err)
	}
	// One index.json write at the end (Save), not one per tag.
	st.AutoSaveIndex = false
	s.backend, s.store = st, st
	return nil
}

// checkRepoLayout reads a repository's index, refusing symlinked or damaged
// index.json and oci-layout; nil when the repository does not exist yet.
func checkRepoLayout(dir string) (*ocispec.Index, error) {
	info, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !info.IsDir():
		return nil, fmt.Errorf("not a folder (%s): not followed", info.Mode().Type())
	}
	for _, name := range []string{ocispec.ImageLayoutFile, ocispec.ImageIndexFile} {
		info, err := os.Lstat(filepath.Join(dir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Killed while being made: no version yet, writing completes it.
			return nil, nil
		case err != nil:
			return nil, err
		case !info.Mode().IsRegular():
			return nil, fmt.Errorf("%s is not a regular file (%s): not followed", name, info.Mode().Type())
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ocispec.ImageIndexFile))
	if err != nil {
		return nil, err
	}
	var index ocispec.Index
	if err := json.Unmarshal(b, &index); err != nil {
		return nil, fmt.Errorf("index.json is damaged: %w", err)
	}
	return &index, nil
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
func (l *Layout) Repository(ctx context.Context, name string) (Repository, error) {
	s, err := l.open(ctx, name)
	if err != nil {
		return nil, err
	}
	return &layoutRepo{l: l, s: s}, nil
}

// Repositories lists the layout's repositories under prefix: those found
// when it was opened (sorted: a namespace's are found without a walk over
// all of them, which made a cold render of 100,000 Targets quadratic) and
// those opened since.
func (l *Layout) Repositories(_ context.Context, prefix string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	keep := func(name string) {
		if s, opened := l.repos[name]; opened {
			if <-s.ready; s.err != nil || len(s.tags) == 0 {
				return
			}
		}
		if !seen[name] && strings.HasPrefix(name, prefix) {
			seen[name] = true
			out = append(out, name)
		}
	}
	i, _ := slices.BinarySearch(l.known, prefix)
	for ; i < len(l.known) && strings.HasPrefix(l.known[i], prefix); i++ {
		keep(l.known[i])
	}
	for name := range l.repos {
		keep(name)
	}
	slices.Sort(out)
	return out, nil
}
