package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/objdiff"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// ObjectOptions ask Diff for the Kubernetes objects that change, rendered
// level by level as helm-controller installs them (package objdiff).
type ObjectOptions struct {
	// FluxNamespace is where the bootstrap chart is installed
	// ("flux-system" when empty).
	FluxNamespace string
	// App reads an application chart from its registry; nil: application
	// charts are not rendered (their HelmRelease's change shows).
	App func(ctx context.Context, ref objdiff.Ref) ([]byte, error)
	// NoFiles leaves the charts' files uncompared (ChartDiff.Files empty):
	// what a view of the objects alone does not show.
	NoFiles bool
	// Progress, when set, is called after each changed Target's chain is
	// rendered, one call at a time: done of total.
	Progress func(done, total int)
}

// ObjectChange is one object that changes, the same way on every Target
// named.
type ObjectChange struct {
	objdiff.Change
	Targets []string `json:"targets"`
}

// bootChange is a bootstrap chart that changes: the Target it is of (its
// "<namespace>/<name>") and its archives, before (nil: none) and after.
type bootChange struct {
	target   string
	old, new []byte
}

// chainState collects what Diff's results say of the chain: the bootstrap
// charts that change, and the new content of every chart that does, at the
// version publish would give it.
type chainState struct {
	boots []bootChange
	fresh map[string]freshChart
}

type freshChart struct {
	version string
	archive []byte
}

// add notes a changed chart's result.
func (s *chainState) add(target string, r publish.Result) {
	if s.fresh == nil {
		s.fresh = map[string]freshChart{}
	}
	if _, ok := s.fresh[r.Repository]; !ok {
		s.fresh[r.Repository] = freshChart{version: r.Version, archive: publish.ChartLayer(r.New)}
	}
	if chain.IsBootstrapRepository(r.Repository) {
		s.boots = append(s.boots, bootChange{target: target, old: publish.ChartLayer(r.Old), new: publish.ChartLayer(r.New)})
	}
}

// renderCacheSize bounds the renders and charts a diff keeps to share
// between Targets: Targets are walked in order, so a chart the Targets of a
// namespace share, or a release the same on Targets of other namespaces, is
// used again within a few hundred renders.
const renderCacheSize = 1024

// objects renders, for every bootstrap chart that changes, the chain before
// and after (objdiff.Changes; the Targets at once, GOMAXPROCS at a time), and
// lists the objects that change; a change that is the same on several
// Targets is listed once, naming them all. notes say what was not rendered.
func (s *chainState) objects(ctx context.Context, plan *Plan, store store.Store, registry string, oo ObjectOptions) ([]ObjectChange, []string, error) {
	registries, fallback := renderRegistries(plan, registry)
	flux := cmp.Or(oo.FluxNamespace, "flux-system")
	read := storeReader(store)
	// The connected side reads a mirror's copies from their sources.
	app := originsOf(plan).reader(oo.App)
	fresh := func(ctx context.Context, repo, version string) ([]byte, error) {
		if f, ok := s.fresh[repo]; ok && f.version == version {
			return f.archive, nil
		}
		return read(ctx, repo, version)
	}
	type result struct {
		changes []objdiff.Change
		notes   []objdiff.Note
	}
	results := make([]result, len(s.boots))
	cache := objdiff.NewCache(renderCacheSize)
	var mu sync.Mutex
	done := 0
	step := func() {
		if oo.Progress != nil {
			mu.Lock()
			defer mu.Unlock()
			done++
			oo.Progress(done, len(s.boots))
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, b := range s.boots {
		g.Go(func() error {
			// A Target gone from the input (an orphan pruned) has none.
			reg, ok := registries[b.target]
			if !ok {
				reg = fallback
			}
			before := &objdiff.Walker{Registry: reg, FluxNamespace: flux, Store: read, App: app, Cache: cache}
			after := &objdiff.Walker{Registry: reg, FluxNamespace: flux, Store: fresh, App: app, Cache: cache}
			changes, err := objdiff.Changes(gctx, before, after, b.old, b.new)
			if err != nil {
				return fmt.Errorf("%s: %w", b.target, err)
			}
			results[i] = result{changes, append(before.Notes, after.Notes...)}
			step()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	var out []ObjectChange
	index := map[string]int{}
	var notes []objdiff.Note
	for i, r := range results {
		for _, c := range r.changes {
			k := c.Key() + "\x00" + c.Diff
			if j, ok := index[k]; ok {
				out[j].Targets = append(out[j].Targets, s.boots[i].target)
				continue
			}
			index[k] = len(out)
			out = append(out, ObjectChange{Change: c, Targets: []string{s.boots[i].target}})
		}
		notes = append(notes, r.notes...)
	}
	summary := noteLines(notes)
	if oo.App == nil && len(s.boots) > 0 {
		summary = append(summary, "application charts were not read: their HelmReleases' changes show, not their objects")
	}
	return out, summary, nil
}

// renderRegistries are the registries the Targets' bootstrap charts name,
// as Run names them: the one given, else each Target's render registry;
// fallback, for a Target gone from the input, the first of them.
func renderRegistries(plan *Plan, registry string) (map[string]string, string) {
	registries := map[string]string{}
	fallback := registry
	for _, t := range plan.Targets {
		r := t.bootstrapRegistry(registry)
		registries[t.Namespace+"/"+t.Name] = r
		fallback = cmp.Or(fallback, r)
	}
	return registries, fallback
}

// noteLines say per reason which HelmReleases were not rendered: one line
// for the same unreachable registry on a thousand Targets.
func noteLines(notes []objdiff.Note) []string {
	var reasons []string
	releases := map[string][]string{}
	seen := map[objdiff.Note]bool{} // not a search of each reason's list: one per Target
	for _, n := range notes {
		if _, ok := releases[n.Reason]; !ok {
			reasons = append(reasons, n.Reason)
		}
		if !seen[n] {
			seen[n] = true
			releases[n.Reason] = append(releases[n.Reason], n.Release)
		}
	}
	var out []string
	for _, r := range reasons {
		rels := releases[r]
		who := "HelmRelease " + rels[0]
		if len(rels) > 1 {
			who += fmt.Sprintf(" and %d more", len(rels)-1)
		}
		out = append(out, fmt.Sprintf("%s: not rendered: %s", who, r))
	}
	return out
}

// storeReader reads chart archives from the store, each version once (two
// Targets at the same moment may both read it).
func storeReader(store store.Store) func(ctx context.Context, repo, version string) ([]byte, error) {
	type read struct {
		archive []byte
		err     error
	}
	var mu sync.Mutex
	cache := map[string]read{}
	return func(ctx context.Context, repo, version string) ([]byte, error) {
		k := repo + ":" + version
		mu.Lock()
		r, ok := cache[k]
		mu.Unlock()
		if ok {
			return r.archive, r.err
		}
		archive, err := publish.ReadChart(ctx, store, repo, version)
		mu.Lock()
		cache[k] = read{archive, err}
		mu.Unlock()
		return archive, err
	}
}
