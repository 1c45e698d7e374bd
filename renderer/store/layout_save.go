package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"github.com/solar-pipeline/solar/internal/killpoint"
)

// SaveLast tells the layout that the repository names what the others hold,
// as publish's namespace indexes do: Save writes it after them, and empties
// its old index.json before any of theirs is replaced.
func (r *layoutRepo) SaveLast() {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.s.last = true
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Save writes the index.json of every repository that got a tag, in the order
// they were first tagged, those told to SaveLast after all others: its tagged
// manifests in version order, so the same layout gives the same bytes. A kill at any moment leaves the old index or the
// new one, and so does a power loss: every new index is first written to a
// temporary file, then the file system is synced once (the blobs, which oras
// writes unsynced, and the temporary files), the files are renamed over the old
// ones, and the file system is synced again. Two syncs for the whole run (for
// each batch of a batched run, Flush) instead of two per file: with 10,000
// repositories, per-file syncs were most of the time of a render
// (docs/benchmarks.md).
func (l *Layout) Save(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := l.saveOrder()
	type pending struct {
		s        *layoutStore
		tmp, dst string
		last     bool
	}
	var todo []pending
	defer func() {
		for _, p := range todo {
			os.Remove(p.tmp) // after the rename: nothing there
		}
	}()
	for _, name := range names {
		s := l.repos[name]
		<-s.ready
		if s.err != nil || s.store == nil || !s.dirty {
			continue
		}
		b, err := s.indexJSON(ctx, name)
		if err != nil {
			return err
		}
		dst := filepath.Join(s.dir, ocispec.ImageIndexFile)
		tmp, err := writeTemp(dst, b)
		if err != nil {
			return fmt.Errorf("saving OCI layout index of %s: %w", name, err)
		}
		todo = append(todo, pending{s: s, tmp: tmp, dst: dst, last: s.last})
	}
	if len(todo) == 0 {
		return nil
	}
	killpoint.Here("layout-save-written")
	if err := syncFS(l.dir); err != nil {
		return fmt.Errorf("saving OCI layout %s: %w", l.dir, err)
	}
	if !todo[0].last { // a repository changes, not only those saved last (sorted last)
		var last []string
		for _, p := range todo {
			if p.last {
				last = append(last, p.dst)
			}
		}
		if err := blankLast(l.dir, last); err != nil {
			return err
		}
	}
	for _, p := range todo {
		if err := os.Rename(p.tmp, p.dst); err != nil {
			return fmt.Errorf("saving OCI layout index %s: %w", p.dst, err)
		}
		p.s.dirty = false
		killpoint.Here("layout-save-renamed")
	}
	if err := syncFS(l.dir); err != nil {
		return fmt.Errorf("saving OCI layout %s: %w", l.dir, err)
	}
	killpoint.Here("layout-save-synced")
	return nil
}

// saveOrder is the order Save writes the repositories in: those told to
// SaveLast after the others (they name what the others hold), each in the
// order they first changed. Layout.mu is held.
func (l *Layout) saveOrder() []string {
	names := slices.Sorted(maps.Keys(l.repos))
	slices.SortStableFunc(names, func(a, b string) int {
		return cmp.Or(compareBool(l.repos[a].last, l.repos[b].last), cmp.Compare(l.repos[a].order, l.repos[b].order))
	})
	return names
}

// indexJSON is the index.json of repository name: its tagged manifests in
// tag order, then its signatures (untagged, as oras keeps referrers in a
// layout). Layout.mu is held.
func (s *layoutStore) indexJSON(ctx context.Context, name string) ([]byte, error) {
	index := ocispec.Index{Manifests: []ocispec.Descriptor{}}
	index.SchemaVersion = 2
	index.MediaType = ocispec.MediaTypeImageIndex
	for _, tag := range s.tags {
		desc, err := s.store.Resolve(ctx, tag)
		if err != nil {
			return nil, fmt.Errorf("saving OCI layout index of %s: %s: %w", name, tag, err)
		}
		desc.Annotations = map[string]string{ocispec.AnnotationRefName: tag}
		index.Manifests = append(index.Manifests, desc)
	}
	index.Manifests = append(index.Manifests, s.referrers...)
	slices.SortFunc(index.Manifests, func(a, b ocispec.Descriptor) int {
		return cmp.Or(cmp.Compare(a.Annotations[ocispec.AnnotationRefName], b.Annotations[ocispec.AnnotationRefName]),
			cmp.Compare(a.Digest, b.Digest))
	})
	return json.Marshal(index)
}

// blankLast empties the repositories saved last (SaveLast: publish's
// namespace indexes) about to be replaced (their index.json files, dsts)
// before any other repository's new index.json is renamed into place, and
// syncs: a kill between the others' renames and theirs then leaves none of
// them naming what the others no longer hold, only repositories without a
// version (namespaces without an index).
func blankLast(dir string, dsts []string) error {
	empty := ocispec.Index{Manifests: []ocispec.Descriptor{}, MediaType: ocispec.MediaTypeImageIndex}
	empty.SchemaVersion = 2
	b, err := json.Marshal(empty)
	if err != nil {
		return err
	}
	blanked := false
	for _, dst := range dsts {
		if _, err := os.Lstat(dst); err != nil {
			continue // a new repository: it named nothing yet
		}
		if err := writeAtomic(dst, b); err != nil {
			return fmt.Errorf("saving OCI layout index %s: %w", dst, err)
		}
		blanked = true
	}
	if !blanked {
		return nil
	}
	killpoint.Here("layout-save-indexes-blanked")
	return syncFS(dir)
}

// writeAtomic writes a file whole or not at all, for other processes: a
// temporary file in the same folder renamed over the name. It does not sync:
// Save makes the layout durable.
func writeAtomic(name string, data []byte) error {
	tmp, err := writeTemp(name, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes data to a new temporary file beside name and returns its
// path.
func writeTemp(name string, data []byte) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// syncFS flushes the file system that holds dir to disk (syncfs(2)).
func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}

// Flusher is a store that saves what a run wrote so far and lets it go
// from memory: a batched run (pipeline.Options.Batch) flushes after each
// batch, so that it holds the repositories of one batch, not all of them.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Flush saves (Save) and forgets every repository opened so far: one asked
// for again is opened again from disk. Without it a layout holds an oras
// store of every repository a run wrote, its largest memory at 100,000
// Targets.
func (l *Layout) Flush(ctx context.Context) error {
	if err := l.Save(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var added []string
	for name, s := range l.repos {
		if <-s.ready; s.dirty {
			continue // not saved: kept for the run's own Save
		}
		if _, found := slices.BinarySearch(l.known, name); s.err == nil && len(s.tags) > 0 && !found {
			added = append(added, name)
		}
		delete(l.repos, name)
	}
	l.known = append(l.known, added...)
	slices.Sort(l.known) // Repositories searches it
	return nil
}

// Flush flushes the layout the overlay writes into.
func (o *overlay) Flush(ctx context.Context) error { return o.top.Flush(ctx) }
