package pipeline

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/solar-pipeline/solar/internal/killpoint"
	"github.com/solar-pipeline/solar/internal/parallel"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// indexes are the namespace indexes of a run (publish.Index): read before
// anything is published, their entries removed for the repositories about
// to be pushed, and written last with what the run published or found.
type indexes struct {
	// store is where the indexes are read and written; removals is where
	// the entries of what the run pushes are removed (a layout over a
	// registry: its layout, whose indexes it neither reads nor writes).
	store, removals store.Store
	opts            Options
	// read are the indexes read, by namespace; none the namespaces read
	// that had none. A namespace in neither was not read (Full, an index
	// left aside, a layout over a registry).
	read map[string]*publish.Index
	none map[string]bool
}

// newIndexes are the indexes of store, none read yet: beforePush removes
// from each.
func newIndexes(st store.Store, opts Options) *indexes {
	ix := &indexes{store: st, removals: st, opts: opts, read: map[string]*publish.Index{}, none: map[string]bool{}}
	if o, ok := st.(interface{ Top() *store.Layout }); ok {
		ix.removals = o.Top()
	}
	return ix
}

// openIndexes reads the indexes of the namespaces of the run. A store that
// is neither a registry nor a layout (a layout over a registry) keeps none;
// with Full none is read. An index that is damaged or not signed with the
// run's key is left aside, with a warning: its namespace goes the full way,
// and it is replaced.
func openIndexes(ctx context.Context, store store.Store, namespaces []string, opts Options) (*indexes, error) {
	ix := newIndexes(store, opts)
	if !indexable(store) || opts.Full {
		return ix, nil
	}
	v, err := publish.IndexVerifier(opts.SigningKey)
	if err != nil {
		return nil, err
	}
	got := make([]*publish.Index, len(namespaces))
	aside := make([]bool, len(namespaces))
	err = parallel.Each(ctx, len(namespaces), opts.Concurrency, func(ctx context.Context, i int) error {
		var err error
		got[i], err = publish.ReadIndex(ctx, store, namespaces[i], v)
		if errors.Is(err, publish.ErrIndex) {
			opts.log().Warn("the namespace's index is left aside: its repositories are asked one by one", "namespace", namespaces[i], "reason", err)
			aside[i] = true
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, x := range got {
		switch {
		case x != nil:
			ix.read[namespaces[i]] = x
		case !aside[i]:
			ix.none[namespaces[i]] = true
		}
	}
	return ix, nil
}

// indexable: the store keeps namespace indexes (a registry or a layout,
// not a layout over a registry, whose index would describe neither).
func indexable(st store.Store) bool {
	switch st.(type) {
	case *store.Remote, *store.Layout:
		return true
	}
	return false
}

// entries are the entries of every index read, by repository (nil where
// the store keeps no indexes).
func (ix *indexes) entries() map[string]publish.Entry {
	if !indexable(ix.store) {
		return nil
	}
	out := map[string]publish.Entry{}
	for _, x := range ix.read {
		maps.Copy(out, x.Repositories)
	}
	return out
}

// repositories are the repositories the index of ns names, sorted; ok is
// false where none was read.
func (ix *indexes) repositories(ns string) (_ []string, ok bool) {
	x, ok := ix.read[ns]
	if !ok {
		return nil, false
	}
	return slices.Sorted(maps.Keys(x.Repositories)), true
}

// beforePush removes the entries of repos, which the run is about to push,
// from their namespaces' indexes (publish.Options.BeforePush): from an index
// read, where it names them; from one not read (Full, left aside, a layout
// over a registry), always. A namespace that had no index when the run
// began has none to change.
func (ix *indexes) beforePush(ctx context.Context, repos []string) error {
	byNS := map[string][]string{}
	for _, r := range repos {
		ns := chain.Namespace(r)
		if x, ok := ix.read[ns]; ok {
			if _, named := x.Repositories[r]; !named {
				continue
			}
		} else if ix.none[ns] {
			continue
		}
		byNS[ns] = append(byNS[ns], r)
	}
	return updateIndexes(ctx, ix, ix.removals, byNS, func(x *publish.Index, repos []string) { x.Remove(repos) })
}

// commit writes into the index of each namespace the results of the run
// that did not come from it: written, or found unchanged in the store.
func (ix *indexes) commit(ctx context.Context, results ...[]publish.Result) error {
	if !indexable(ix.store) || ix.opts.DryRun {
		return nil
	}
	byNS := map[string]map[string]publish.Entry{}
	for _, rs := range results {
		for repo, e := range publish.IndexEntries(rs) {
			ns := chain.Namespace(repo)
			if byNS[ns] == nil {
				byNS[ns] = map[string]publish.Entry{}
			}
			byNS[ns][repo] = e
		}
	}
	if len(byNS) > 0 {
		killpoint.Here("index-commit") // the charts pushed, the indexes not written
	}
	return updateIndexes(ctx, ix, ix.store, byNS, func(x *publish.Index, e map[string]publish.Entry) { x.Merge(e) })
}

// indexConcurrency bounds the index updates at once: each mostly waits
// Settle, not for the CPU or the registry (a 1 % change of 10,000 Targets
// updates 100 namespaces' indexes twice).
const indexConcurrency = 32

// updateIndexes applies change with each namespace's part to its index in
// store, the namespaces in parallel.
func updateIndexes[T any](ctx context.Context, ix *indexes, store store.Store, parts map[string]T, change func(*publish.Index, T)) error {
	namespaces := slices.Sorted(maps.Keys(parts))
	iopts := publish.IndexOptions{Settle: max(ix.opts.Settle, 0), SigningKey: ix.opts.SigningKey, Log: ix.opts.log()}
	return parallel.Each(ctx, len(namespaces), max(ix.opts.Concurrency, indexConcurrency), func(ctx context.Context, i int) error {
		ns := namespaces[i]
		return publish.UpdateIndex(ctx, store, ns, func(x *publish.Index) { change(x, parts[ns]) }, iopts)
	})
}
