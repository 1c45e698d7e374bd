package pipeline

import (
	"context"

	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/resolve"
	"github.com/solar-pipeline/solar/renderer/store"
)

// batchTargets bounds the Targets of one batch of a batched run
// (Options.Batch): whole namespaces are added to a batch until it holds
// this many. A batch's namespace indexes are read and written together (32
// at a time), so a batch of many small namespaces costs few more round
// trips than the whole input did; a batch's jobs hold their rendered charts
// until it is published (about 35 KB a bootstrap chart) and its
// resolutions until it is done (about 70 KB a Target with 5 releases), so
// it is not larger. Nor smaller: a publish settles its tags once a batch
// (half a second, a few times), so at 250 a 1 % change of 100,000 Targets
// took 950 s, mostly waiting (docs/benchmarks.md, run P).
var batchTargets = 1000

// lazyPlan is a plan whose Targets Run resolves a batch at a time.
type lazyPlan struct {
	resolver *resolve.Resolver
	creds    *credentials
	// selected are the Targets the options select, in the set's order
	// (by namespace, then name).
	selected []*model.Target
	// all are the plan's Targets of the input by namespace (Plan.all).
	all map[string][]load.ID
	// withoutCredential counts, as Run goes, the Targets of its batches
	// that get the agent and have no credential (Plan.WithoutCredential).
	withoutCredential int
}

// Selected is how many Targets the plan publishes (or, for a batched
// plan, will resolve and publish).
func (p *Plan) Selected() int {
	if p.lazy != nil {
		return len(p.lazy.selected)
	}
	return len(p.Targets)
}

// batches splits the selected Targets into whole namespaces, each batch
// holding up to batchTargets (a larger namespace alone).
func (l *lazyPlan) batches() [][]*model.Target {
	var out [][]*model.Target
	start := 0
	for i := 0; i < len(l.selected); {
		end := namespaceEnd(l.selected, i)
		if i > start && end-start > batchTargets {
			out = append(out, l.selected[start:i])
			start = i
		}
		i = end
	}
	if start < len(l.selected) {
		out = append(out, l.selected[start:])
	}
	return out
}

// namespaceEnd is the index after the namespace that starts at i.
func namespaceEnd(targets []*model.Target, i int) int {
	j := i
	for j < len(targets) && targets[j].Namespace == targets[i].Namespace {
		j++
	}
	return j
}

// batch is the plan of one batch: its Targets resolved, with their
// credentials; the Targets of the input, the Rollouts, of its namespaces
// only (a Rollout governs Targets of its own namespace).
func (p *Plan) batch(ctx context.Context, targets []*model.Target) *Plan {
	namespaces := map[string]bool{}
	for _, t := range targets {
		namespaces[t.Namespace] = true
	}
	b := &Plan{app: p.app, all: map[load.ID]bool{}, Targets: resolveTargets(p.lazy.resolver, targets)}
	if p.lazy.all == nil {
		p.lazy.all = map[string][]load.ID{}
		for id := range p.all {
			p.lazy.all[id.Namespace] = append(p.lazy.all[id.Namespace], id)
		}
	}
	for ns := range namespaces {
		for _, id := range p.lazy.all[ns] {
			b.all[id] = true
		}
	}
	for _, r := range p.rollouts {
		if namespaces[r.Namespace] {
			b.rollouts = append(b.rollouts, r)
		}
	}
	p.lazy.creds.sync(ctx, b.Targets)
	return b
}

// runBatches is Run of a batched plan: each batch resolved, published
// (Run's order within it: release charts, bootstrap charts, orphans, the
// namespaces' indexes), saved (a layout's store.Flusher) and let go before
// the next. The report is the one Run of the whole plan would give
// (TestBatchedRunEqualsWhole).
func runBatches(ctx context.Context, plan *Plan, st store.Store, opts Options, cache *publish.PackCache) (*Report, error) {
	report := NewReport(plan)
	report.DryRun = opts.DryRun
	// Refused before any batch is published, as Run of the whole refuses.
	unresolved := make([]*Target, len(plan.lazy.selected))
	for i, t := range plan.lazy.selected {
		unresolved[i] = &Target{Resolution: &resolve.Resolution{Target: t}}
	}
	if err := plan.checkScope(unresolved, opts); err != nil {
		return report, err
	}
	total, done := len(plan.lazy.selected), 0
	// Each Target's report once, not the copies a growing slice leaves
	// behind (80 MB at 100,000 Targets).
	report.Targets = make([]TargetReport, 0, total)
	for _, targets := range plan.lazy.batches() {
		b := plan.batch(ctx, targets)
		// Only Targets that resolved are published and counted: the total
		// loses the others as their batch resolves, as a run of the whole
		// counts only the valid ones.
		valid := len(b.valid())
		total -= len(targets) - valid
		bopts := opts
		if opts.Progress != nil {
			before := done
			bopts.Progress = func(n, _ int, t TargetReport) { opts.Progress(before+n, total, t) }
			if valid == 0 {
				opts.Progress(done, total, TargetReport{}) // the total alone changed
			}
		}
		r, err := run(ctx, b, st, bopts, cache)
		plan.lazy.withoutCredential += b.WithoutCredential()
		done += valid
		report.Problems = append(report.Problems, r.Problems...)
		for _, t := range r.Targets {
			report.Targets = append(report.Targets, t.reported())
		}
		report.Orphans = append(report.Orphans, r.Orphans...)
		report.Rollouts = append(report.Rollouts, r.Rollouts...)
		if f, ok := st.(store.Flusher); ok && err == nil {
			err = f.Flush(ctx)
		}
		if err != nil {
			report.Problems = report.Problems.Sorted()
			return report, err
		}
	}
	report.Problems = report.Problems.Sorted()
	return report, nil
}

// reported is the Target's report as the report of a batched run keeps it
// (publish.Result.Reported); its releases' results, which the batch's
// Targets share, are changed in place (the batch is done with them).
func (t TargetReport) reported() TargetReport {
	t.Result = t.Result.Reported()
	for _, r := range t.Releases {
		*r.Result = r.Result.Reported()
	}
	return t
}
