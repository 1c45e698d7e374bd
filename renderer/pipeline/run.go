package pipeline

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/chart"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// Run publishes the charts of every Target of the plan that resolved without
// errors: its release and agent charts first (a release chart the Targets of
// a namespace share, once), then its bootstrap chart naming their versions, so
// a bootstrap chart never names a missing chart. Targets with problems are
// skipped (the report names them). An error is a failure of the store, not of
// the input; the report then holds what was done before it.
func Run(ctx context.Context, plan *Plan, store publish.Store, opts Options) (*Report, error) {
	if _, registry := store.(*publish.Remote); registry && opts.Settle == 0 {
		opts.Settle = DefaultSettle
	}
	report := NewReport(plan)
	report.DryRun = opts.DryRun
	targets := plan.valid()
	listed, listErr := listNamespaces(ctx, plan, store, opts)
	if listErr != nil && opts.Prune {
		return report, fmt.Errorf("--prune: the bootstrap repositories of Targets no longer in the input cannot be found: %w", listErr)
	}
	popts := publish.Options{DryRun: opts.DryRun, Settle: opts.Settle, Concurrency: opts.Concurrency, Log: opts.log(), Compare: opts.Compare, SigningKey: opts.SigningKey,
		PackCache: publish.OpenPackCache(opts.CacheDir), Absent: map[string]bool{}}
	if !opts.DryRun {
		defer popts.PackCache.Save()
	}

	// Release and agent charts, each once.
	var jobs []publish.Job
	index := map[string]int{} // repository -> job
	repos := make([][]string, len(targets))
	for i, t := range targets {
		for _, sel := range t.Releases {
			j := t.job(sel)
			if _, ok := index[j.Repository]; !ok {
				index[j.Repository] = len(jobs)
				jobs = append(jobs, j.Publish(opts.Package))
			}
			repos[i] = append(repos[i], j.Repository)
		}
	}
	absent(popts.Absent, jobs, listed)
	released, err := publish.Publish(ctx, store, jobs, popts)
	if err != nil {
		return report, err
	}

	// Then the bootstrap charts, which name the release charts' versions.
	releases := make([][]publish.Result, len(targets))
	jobs = make([]publish.Job, len(targets))
	for i, t := range targets {
		registry := t.bootstrapRegistry(opts.Registry)
		refs := make([]chart.Ref, len(repos[i]))
		for k, repo := range repos[i] {
			r := released[index[repo]]
			releases[i] = append(releases[i], r)
			refs[k] = chart.Ref{URL: chain.URL(registry, repo), Version: r.Version}
		}
		jobs[i] = chart.BootstrapJob(t.Resolution, refs).Publish(opts.Package)
	}
	done := 0
	if opts.Progress != nil {
		popts.Done = func(i int, r publish.Result) {
			done++
			opts.Progress(done, len(targets), targetReport(targets[i], r, releases[i]))
		}
	}
	absent(popts.Absent, jobs, listed)
	boot, err := publish.Publish(ctx, store, jobs, popts)
	for i, t := range targets {
		if boot[i].Action != "" {
			report.Targets = append(report.Targets, targetReport(t, boot[i], releases[i]))
		}
	}
	if err != nil {
		return report, err
	}
	if listErr != nil {
		opts.log().Warn("orphans not looked for: the bootstrap charts of Targets no longer in the input stay as they are", "error", listErr)
		return report, nil
	}
	return report, orphans(ctx, plan, store, opts, report, listed)
}

// bootstrapRegistry is the registry a Target's bootstrap chart names, as
// HOST[:PORT][/PREFIX]: the one given (--registry), else its render
// registry's.
func (t *Target) bootstrapRegistry(given string) string {
	if given != "" || t.RenderRegistry == nil {
		return given
	}
	return t.RenderRegistry.Spec.Hostname
}

// valid are the Targets of the plan without errors: those a run publishes.
func (p *Plan) valid() []*Target {
	var targets []*Target
	for _, t := range p.Targets {
		if !t.Problems.HasErrors() {
			targets = append(targets, t)
		}
	}
	return targets
}

// orphanNamespaces are the namespaces whose repositories a run lists: those
// of its Targets, or of -n; none for one --target or a label selector (nil):
// the Targets such a run leaves out are in plan.all all the same, but a
// Target no longer in the input has neither a name nor labels to match.
func orphanNamespaces(plan *Plan, opts Options) []string {
	if opts.Target != "" || opts.selector() || plan.all == nil {
		return nil
	}
	namespaces := map[string]bool{}
	for t := range plan.all {
		if opts.Namespace == "" || t.Namespace == opts.Namespace {
			namespaces[t.Namespace] = true
		}
	}
	if opts.Namespace != "" {
		namespaces[opts.Namespace] = true
	}
	return slices.Sorted(maps.Keys(namespaces))
}

// listNamespaces lists the repositories of the run's namespaces before
// anything is published, by namespace: a chart whose repository is not there
// has no version to ask for, and the orphans are found among them. A store
// that cannot list gives nil; a listing that fails (a registry without the
// catalog API: Docker Hub, GHCR), nil and its error: versions are then asked
// for, and orphans are not looked for.
func listNamespaces(ctx context.Context, plan *Plan, store publish.Store, opts Options) (map[string][]string, error) {
	lister, ok := store.(publish.Lister)
	if !ok {
		return nil, nil
	}
	listed := map[string][]string{}
	for _, ns := range orphanNamespaces(plan, opts) {
		repos, err := lister.Repositories(ctx, ns+"/")
		if err != nil {
			return nil, err
		}
		listed[ns] = repos
	}
	return listed, nil
}

// absent adds to a the repositories of jobs that the listing of their
// namespace did not name.
func absent(a map[string]bool, jobs []publish.Job, listed map[string][]string) {
	known := map[string]bool{}
	for _, repos := range listed {
		for _, r := range repos {
			known[r] = true
		}
	}
	for _, j := range jobs {
		ns, _, _ := strings.Cut(j.Repository, "/")
		if _, ok := listed[ns]; ok && !known[j.Repository] {
			a[j.Repository] = true
		}
	}
}

// orphans finds, in the namespaces of the run, the bootstrap repositories of
// Targets no longer in the input, and with opts.Prune publishes a version of
// each without releases. A run of one --target, or of a label selector, looks
// for none.
func orphans(ctx context.Context, plan *Plan, store publish.Store, opts Options, report *Report, listed map[string][]string) error {
	var jobs []publish.Job
	for _, ns := range orphanNamespaces(plan, opts) {
		for _, repo := range listed[ns] {
			in, name, ok := chain.BootstrapTarget(repo)
			if !ok || in != ns || plan.all[targetID(ns, name)] {
				continue
			}
			report.Orphans = append(report.Orphans, Orphan{Namespace: ns, Name: name})
			gone := &resolve.Resolution{Target: &model.Target{Meta: model.Meta{Name: name, Namespace: ns}}}
			jobs = append(jobs, chart.BootstrapJob(gone, nil).Publish(opts.Package))
		}
	}
	if !opts.Prune || len(jobs) == 0 {
		return nil
	}
	pruned, err := publish.Publish(ctx, store, jobs, publish.Options{DryRun: opts.DryRun, Settle: opts.Settle,
		Concurrency: opts.Concurrency, Log: opts.log(), Compare: opts.Compare, SigningKey: opts.SigningKey})
	for i := range pruned {
		if pruned[i].Action != "" {
			report.Orphans[i].Pruned = &pruned[i]
		}
	}
	return err
}
