package pipeline

import (
	"context"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// Collector is a store that removes its old versions: publish.Layout,
// publish.Remote.
type Collector interface {
	publish.Lister
	GC(ctx context.Context, opts publish.GCOptions) (publish.GCResult, error)
}

// GC removes the old versions of solar's chart repositories in c, as Verify
// checks them (chain.IsChartRepository); the other repositories under the
// prefix are left as they are (GCResult.Skipped). It marks from every
// bootstrap chart version it keeps: the release chart versions one names stay
// (GCResult.Held), for a Target not rendered since (one skipped, say, because
// its credential failed) still installs them.
func GC(ctx context.Context, c Collector, opts publish.GCOptions) (publish.GCResult, error) {
	repos, err := c.Repositories(ctx, opts.Prefix)
	if err != nil {
		return publish.GCResult{}, err
	}
	if len(repos) == 0 {
		return publish.GCResult{}, ErrNoRepository
	}
	known := map[string]bool{}
	for _, name := range repos {
		known[name] = true
	}
	opts.Select = chain.IsChartRepository
	opts.Refs = func(ctx context.Context, repo publish.Repository, name, version string) ([]publish.Ref, error) {
		if !chain.IsBootstrapRepository(name) {
			return nil, nil
		}
		named, err := bootstrapRefs(ctx, repo, version)
		if err != nil {
			return nil, err
		}
		var refs []publish.Ref
		for _, n := range named {
			if target := repository(n.URL, func(name string) bool { return known[name] }); target != "" {
				refs = append(refs, publish.Ref{Repository: target, Version: n.Version})
			}
		}
		return refs, nil
	}
	return c.GC(ctx, opts)
}
