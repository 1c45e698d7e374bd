package pipeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/objdiff"
	"github.com/solar-pipeline/solar/renderer/publish"
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

// objects renders, for every bootstrap chart that changes, the chain before
// and after, and lists the objects that change; a change that is the same on
// several Targets is listed once, naming them all. notes say what was not
// rendered.
func (s *chainState) objects(ctx context.Context, plan *Plan, store publish.Store, registry string, oo ObjectOptions) ([]ObjectChange, []string, error) {
	if registry == "" {
		for _, t := range plan.Targets {
			if t.RenderRegistry != nil {
				registry = t.RenderRegistry.Spec.Hostname
				break
			}
		}
	}
	flux := oo.FluxNamespace
	if flux == "" {
		flux = "flux-system"
	}
	read := storeReader(store)
	fresh := func(ctx context.Context, repo, version string) ([]byte, error) {
		if f, ok := s.fresh[repo]; ok && f.version == version {
			return f.archive, nil
		}
		return read(ctx, repo, version)
	}
	var out []ObjectChange
	index := map[string]int{}
	var notes []string
	for _, b := range s.boots {
		before := &objdiff.Walker{Registry: registry, FluxNamespace: flux, Store: read, App: oo.App}
		after := &objdiff.Walker{Registry: registry, FluxNamespace: flux, Store: fresh, App: oo.App}
		old, err := before.Walk(ctx, b.old)
		if err != nil {
			return nil, nil, fmt.Errorf("%s, as the store has it: %w", b.target, err)
		}
		new, err := after.Walk(ctx, b.new)
		if err != nil {
			return nil, nil, fmt.Errorf("%s, as publish would make it: %w", b.target, err)
		}
		changes, err := objdiff.Compare(old, new)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", b.target, err)
		}
		for _, c := range changes {
			k := c.Key() + "\x00" + c.Diff
			if i, ok := index[k]; ok {
				out[i].Targets = append(out[i].Targets, b.target)
				continue
			}
			index[k] = len(out)
			out = append(out, ObjectChange{Change: c, Targets: []string{b.target}})
		}
		for _, n := range append(before.Notes, after.Notes...) {
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
	}
	return out, notes, nil
}

// storeReader reads chart archives from the store, each version once.
func storeReader(store publish.Store) func(ctx context.Context, repo, version string) ([]byte, error) {
	type read struct {
		archive []byte
		err     error
	}
	cache := map[string]read{}
	return func(ctx context.Context, repo, version string) ([]byte, error) {
		k := repo + ":" + version
		if r, ok := cache[k]; ok {
			return r.archive, r.err
		}
		archive, err := publish.ReadChart(ctx, store, repo, version)
		cache[k] = read{archive, err}
		return archive, err
	}
}
