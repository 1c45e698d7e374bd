package pipeline

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/chart"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/resolve"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Run publishes the charts of every Target of the plan that resolved without
// errors: its release and agent charts first (a release chart the Targets of
// a namespace share, once), then its bootstrap chart naming their versions, so
// a bootstrap chart never names a missing chart. Targets with problems are
// skipped (the report names them). An error is a failure of the store, not of
// the input; the report then holds what was done before it.
func Run(ctx context.Context, plan *Plan, st store.Store, opts Options) (*Report, error) {
	cache := publish.OpenPackCache(opts.CacheDir)
	if !opts.DryRun {
		defer cache.Save()
	}
	if plan.lazy != nil {
		return runBatches(ctx, plan, st, opts, cache)
	}
	return run(ctx, plan, st, opts, cache)
}

// run is Run of a plan whose Targets are resolved, with the pack cache.
func run(ctx context.Context, plan *Plan, st store.Store, opts Options, cache *publish.PackCache) (*Report, error) {
	if _, registry := st.(*store.Remote); registry && opts.Settle == 0 {
		opts.Settle = DefaultSettle
	}
	report := NewReport(plan)
	report.DryRun = opts.DryRun
	targets := plan.valid()
	if err := plan.checkScope(targets, opts); err != nil {
		return report, err
	}
	ix, err := openIndexes(ctx, st, runNamespaces(plan, targets, opts), opts)
	if err != nil {
		return report, err
	}
	listed, listErr := listNamespaces(ctx, plan, st, opts, ix)
	if listErr != nil && opts.Prune {
		return report, fmt.Errorf("--prune: the bootstrap repositories of Targets no longer in the input cannot be found: %w", listErr)
	}
	popts := publish.Options{DryRun: opts.DryRun, Settle: opts.Settle, Concurrency: opts.Concurrency, Log: opts.log(), Compare: opts.Compare, SigningKey: opts.SigningKey,
		PackCache: cache, Absent: map[string]bool{}, Index: ix.entries(), BeforePush: ix.beforePush,
		Repair: opts.Full}

	// Release and agent charts, each once.
	var jobs []publish.Job
	index := map[string]int{} // repository -> job
	repos := make([][]string, len(targets))
	for i, t := range targets {
		for _, sel := range t.Releases {
			j := plan.job(t, sel)
			if _, ok := index[j.Repository]; !ok {
				index[j.Repository] = len(jobs)
				jobs = append(jobs, j.Publish(opts.Package))
			}
			repos[i] = append(repos[i], j.Repository)
		}
	}
	absent(popts.Absent, jobs, listed, ix)
	released, err := publish.Publish(ctx, st, jobs, popts)
	if err != nil {
		return report, err
	}

	// Then the bootstrap charts, which name the release charts' versions.
	jobs, releases := bootstrapJobs(targets, repos, func(repo string) *publish.Result { return &released[index[repo]] }, opts)
	done, shared := 0, releaseReports{}
	if opts.Progress != nil {
		popts.Done = func(i int, r publish.Result) {
			done++
			opts.Progress(done, len(targets), targetReport(targets[i], r, releases[i], shared))
		}
	}
	absent(popts.Absent, jobs, listed, ix)
	gate, err := gateRollouts(ctx, plan, storeAndOptions{st: st, popts: popts, opts: opts}, targets, jobs)
	if err != nil {
		return report, err
	}
	report.Rollouts = gate.reports
	boot, err := gate.publish(ctx, st, popts)
	for i, t := range targets {
		if boot[i].Action != "" {
			report.Targets = append(report.Targets, gate.report(i, targetReport(t, boot[i], releases[i], shared)))
		}
	}
	if err != nil {
		return report, err
	}
	if listErr != nil {
		opts.log().Warn("orphans not looked for: the bootstrap charts of Targets no longer in the input stay as they are", "error", listErr)
	} else if err := orphans(ctx, plan, st, opts, report, listed, ix.beforePush); err != nil {
		return report, err
	}
	// Last, the namespaces' indexes: the commit point of their publish.
	return report, ix.commit(ctx, released, boot, report.pruned())
}

// bootstrapJobs are the bootstrap jobs of targets, each naming the release
// charts of its repositories (repos[i]) at the versions published (result),
// and those results by Target (shared: a namespace's Targets name the same
// release charts).
func bootstrapJobs(targets []*Target, repos [][]string, result func(repo string) *publish.Result, opts Options) ([]publish.Job, [][]*publish.Result) {
	releases := make([][]*publish.Result, len(targets))
	jobs := make([]publish.Job, len(targets))
	for i, t := range targets {
		registry := t.bootstrapRegistry(opts.Registry)
		refs := make([]chart.Ref, len(repos[i]))
		for k, repo := range repos[i] {
			r := result(repo)
			releases[i] = append(releases[i], r)
			refs[k] = chart.Ref{URL: chain.URL(registry, repo), Version: r.Version}
		}
		jobs[i] = chart.BootstrapJob(t.Resolution, refs).Publish(opts.Package)
	}
	return jobs, releases
}

// runNamespaces are the namespaces whose indexes a run reads: those of its
// Targets and those it looks for orphans in.
func runNamespaces(plan *Plan, targets []*Target, opts Options) []string {
	namespaces := map[string]bool{}
	for _, t := range targets {
		namespaces[t.Namespace] = true
	}
	for _, ns := range orphanNamespaces(plan, opts) {
		namespaces[ns] = true
	}
	return slices.Sorted(maps.Keys(namespaces))
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
// has no version to ask for, and the orphans are found among them. A
// namespace whose index was read is not listed: its index names its
// repositories (unless Prune or Full asks for the store's own list). A store
// that cannot list gives nil; a listing that fails (a registry without the
// catalog API: Docker Hub, GHCR), nil and its error: versions are then asked
// for, and orphans are not looked for.
func listNamespaces(ctx context.Context, plan *Plan, st store.Store, opts Options, ix *indexes) (map[string][]string, error) {
	lister, ok := st.(store.Lister)
	if !ok {
		return nil, nil
	}
	listed := map[string][]string{}
	for _, ns := range orphanNamespaces(plan, opts) {
		if repos, ok := ix.repositories(ns); ok && !opts.Prune {
			listed[ns] = repos
			continue
		}
		repos, err := lister.Repositories(ctx, ns+"/")
		if err != nil {
			return nil, err
		}
		listed[ns] = repos
	}
	return listed, nil
}

// absent adds to a the repositories of jobs that the store's listing of
// their namespace did not name (an index's list, which may lack a
// repository the store has, says nothing of what is absent).
func absent(a map[string]bool, jobs []publish.Job, listed map[string][]string, ix *indexes) {
	known := map[string]bool{}
	for _, repos := range listed {
		for _, r := range repos {
			known[r] = true
		}
	}
	for _, j := range jobs {
		ns := chain.Namespace(j.Repository)
		if _, indexed := ix.read[ns]; indexed {
			continue
		}
		if _, ok := listed[ns]; ok && !known[j.Repository] {
			a[j.Repository] = true
		}
	}
}

// orphans finds, in the namespaces of the run, the bootstrap repositories of
// Targets no longer in the input, and with opts.Prune publishes a version of
// each without releases (before, as publish.Options.BeforePush, first). A run of one --target, or of a label selector, looks
// for none.
func orphans(ctx context.Context, plan *Plan, store store.Store, opts Options, report *Report, listed map[string][]string,
	before func(context.Context, []string) error) error {
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
		Concurrency: opts.Concurrency, Log: opts.log(), Compare: opts.Compare, SigningKey: opts.SigningKey, BeforePush: before})
	for i := range pruned {
		if pruned[i].Action != "" {
			report.Orphans[i].Pruned = &pruned[i]
		}
	}
	return err
}
