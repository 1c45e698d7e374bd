package pipeline

import (
	"context"
	"sync"

	"github.com/solar-pipeline/solar/internal/settle"

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

// batchesWaiting bounds the batches of a batched publish to a registry in
// flight at once: the next batch begins as soon as the one before it
// waits a settle (publish.Options.Settle: its tags, its indexes), and
// resolves and renders meanwhile. One at a time, every batch with a change
// waited its settles alone: a 1 % change of 100,000 Targets took 950 s at
// 250 Targets a batch, mostly waiting (docs/benchmarks.md, run P). A
// batch that does not wait (nothing pushed, a layout) ends before the next
// begins, so a no-op holds one batch, as before.
const batchesWaiting = 4

// runBatches is Run of a batched plan: each batch resolved, published
// (Run's order within it: release charts, bootstrap charts, orphans, the
// namespaces' indexes), saved (a layout's store.Flusher) and let go. The
// next batch begins when one waits (batchesWaiting), at most one resolving
// at a time. The report is the one Run of the whole plan would give
// (TestBatchedRunEqualsWhole); on an error, it holds the batches before
// the first that failed and those that ended meanwhile, and no batch
// begins after it.
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
	// Each Target's report once, not the copies a growing slice leaves
	// behind (80 MB at 100,000 Targets).
	report.Targets = make([]TargetReport, 0, len(plan.lazy.selected))
	inFlight := 1
	if _, registry := st.(*store.Remote); registry {
		inFlight = batchesWaiting
	}
	s := &batchRun{plan: plan, st: st, opts: opts, cache: cache, total: len(plan.lazy.selected)}
	var firstErr error
	s.run(ctx, plan.lazy.batches(), inFlight, func(r batchResult) {
		report.Problems = append(report.Problems, r.report.Problems...)
		for _, t := range r.report.Targets {
			report.Targets = append(report.Targets, t.reported())
		}
		report.Orphans = append(report.Orphans, r.report.Orphans...)
		report.Rollouts = append(report.Rollouts, r.report.Rollouts...)
		if firstErr == nil {
			firstErr = r.err
		}
	})
	report.Problems = report.Problems.Sorted()
	return report, firstErr
}

// batchRun is the state a batched run's batches share.
type batchRun struct {
	plan  *Plan
	st    store.Store
	opts  Options
	cache *publish.PackCache

	// resolving lets one batch at a time resolve (the resolver, the
	// credentials and the plan's lazy state are not shared).
	resolving sync.Mutex
	// mu guards the rest: the progress, done of total, where total loses
	// the Targets that fail to resolve as their batch resolves (a run of
	// the whole counts only the valid ones); failed, set by a batch that
	// failed (or the context's end), begins no more.
	mu          sync.Mutex
	done, total int
	failed      bool
}

// batchResult is what one batch of a batched run gave.
type batchResult struct {
	report *Report
	err    error
}

// run runs the batches, up to inFlight at once, the next beginning when
// the last begun waits a settle (settle.WhileWaiting) or ends, and gives
// take their results in their order.
func (s *batchRun) run(ctx context.Context, batches [][]*model.Target, inFlight int, take func(batchResult)) {
	results := make([]chan batchResult, len(batches))
	for k := range results {
		results[k] = make(chan batchResult, 1)
	}
	go func() {
		slots := make(chan struct{}, inFlight)
		for k, targets := range batches {
			slots <- struct{}{}
			if s.stopped() || ctx.Err() != nil {
				<-slots
				results[k] <- batchResult{report: &Report{}}
				continue
			}
			waiting := make(chan struct{})
			next := sync.OnceFunc(func() { close(waiting) })
			go func() {
				defer func() { <-slots }()
				defer next()
				results[k] <- s.batch(settle.WhileWaiting(ctx, next), targets)
			}()
			<-waiting
		}
	}()
	for _, r := range results {
		take(<-r)
	}
}

// stopped: a batch failed.
func (s *batchRun) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// batch resolves targets, publishes them and saves the store.
func (s *batchRun) batch(ctx context.Context, targets []*model.Target) batchResult {
	s.resolving.Lock()
	b := s.plan.batch(ctx, targets)
	s.resolving.Unlock()
	// Only Targets that resolved are published and counted.
	valid := len(b.valid())
	s.mu.Lock()
	s.total -= len(targets) - valid
	if valid == 0 && s.opts.Progress != nil {
		s.opts.Progress(s.done, s.total, TargetReport{}) // the total alone changed
	}
	s.mu.Unlock()
	bopts, counted := s.opts, 0
	if s.opts.Progress != nil {
		bopts.Progress = func(_, _ int, t TargetReport) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.done++
			counted++
			s.opts.Progress(s.done, s.total, t)
		}
	}
	r, err := run(ctx, b, s.st, bopts, s.cache)
	if f, ok := s.st.(store.Flusher); ok && err == nil {
		err = f.Flush(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plan.lazy.withoutCredential += b.WithoutCredential()
	if held := valid - counted; held > 0 {
		// Valid Targets a Rollout held back are done too: said now, as
		// other batches may have said their last step already.
		s.done += held
		if s.opts.Progress != nil {
			s.opts.Progress(s.done, s.total, TargetReport{})
		}
	}
	s.failed = s.failed || err != nil
	return batchResult{report: r, err: err}
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
