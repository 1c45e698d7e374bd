package pipeline

import (
	"context"
	"strings"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Collector is a store that removes its old versions: store.Layout,
// store.Remote.
type Collector interface {
	store.Lister
	GC(ctx context.Context, opts store.GCOptions) (store.GCResult, error)
}

// GC removes the old versions of solar's chart repositories in c, as Verify
// checks them (chain.IsChartRepository), and of the namespaces' indexes and
// the rollouts' states; the other repositories under the prefix are left as
// they are (store.GCResult.Skipped). It marks from every bootstrap chart
// version it keeps: the release chart versions one names stay
// (store.GCResult.Held), for a Target not rendered since (one skipped, say,
// because its credential failed) still installs them; and from every
// rollout state it keeps: the bootstrap versions a rollback would publish
// again stay.
func GC(ctx context.Context, c Collector, opts store.GCOptions) (store.GCResult, error) {
	repos, err := c.Repositories(ctx, opts.Prefix)
	if err != nil {
		return store.GCResult{}, err
	}
	if len(repos) == 0 {
		return store.GCResult{}, published.ErrNoRepository
	}
	known := map[string]bool{}
	for _, name := range repos {
		known[name] = true
	}
	// The namespaces' indexes are collected too: their old manifests; and
	// the rollouts' states, each of whose versions names the bootstrap
	// versions a rollback publishes again: those stay.
	opts.Select = func(name string) bool {
		return chain.IsChartRepository(name) || publish.IsIndexRepository(name) || chain.IsRolloutRepository(name)
	}
	// An index keeps its newest version only, and names nothing.
	opts.Own = publish.GCIndexes
	opts.Refs = func(ctx context.Context, repo store.Repository, name, version string) ([]store.Ref, error) {
		if chain.IsRolloutRepository(name) {
			doc, err := rolloutstore.ReadVersion(ctx, repo, version)
			if err != nil || doc == nil {
				return nil, err
			}
			return doc.Refs(), nil
		}
		if !chain.IsBootstrapRepository(name) {
			return nil, nil
		}
		named, err := published.BootstrapRefs(ctx, repo, version)
		if err != nil {
			return nil, err
		}
		var refs []store.Ref
		for _, n := range named {
			if target := published.Repository(n.URL, func(name string) bool { return known[name] }); target != "" {
				refs = append(refs, store.Ref{Repository: target, Version: n.Version})
			}
		}
		return refs, nil
	}
	res, err := c.GC(ctx, opts)
	if err != nil || opts.DryRun {
		return res, err
	}
	if err := gcIndexes(ctx, c, res.Versions); err != nil {
		return res, err
	}
	if l, ok := c.(interface{ Save(context.Context) error }); ok {
		return res, l.Save(ctx) // a layout: the indexes rewritten
	}
	return res, nil
}

// gcIndexes removes from the namespaces' indexes the entries of versions
// removed (repository:version): none, unless an index was stale, since a
// collection keeps the newest version an entry names.
func gcIndexes(ctx context.Context, c Collector, removed []string) error {
	st, ok := c.(store.Store)
	if !ok {
		return nil
	}
	byNS := map[string]map[string]string{}
	for _, rv := range removed {
		repo, version, _ := strings.Cut(rv, ":")
		ns := chain.Namespace(repo)
		if byNS[ns] == nil {
			byNS[ns] = map[string]string{}
		}
		byNS[ns][repo] = version
	}
	var opts Options
	if _, registry := st.(*store.Remote); registry {
		opts.Settle = DefaultSettle
	}
	ix := newIndexes(st, opts)
	return updateIndexes(ctx, ix, st, byNS, func(x *publish.Index, gone map[string]string) {
		for repo, version := range gone {
			if e, ok := x.Repositories[repo]; ok && e.Version == version {
				delete(x.Repositories, repo)
			}
		}
	})
}
