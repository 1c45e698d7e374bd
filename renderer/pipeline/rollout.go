package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/solar-pipeline/solar/internal/killpoint"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/store"
)

// governing is a Rollout of the input, its policy parsed.
type governing struct {
	Namespace, Name string
	Policy          rollout.Policy
	// spec is the Rollout's spec as JSON: a new policy is a new revision.
	spec string
	// governs says whether it governs a Target of its namespace.
	governs func(labels map[string]string) bool
}

// RolloutReport is what a run decided of one Rollout: its revision, phase
// and each member's state.
type RolloutReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Revision names the content rolled out: the Rollout's spec and the
	// bootstrap charts its Targets get.
	Revision string `json:"revision"`
	rollout.Decision
}

// gated is the bootstrap jobs of a run after its Rollouts: per Target the
// job to publish (nil: held back) and what each Rollout decided.
type gated struct {
	jobs    []publish.Job
	reports []RolloutReport
	// member is the Rollout decision of a governed Target, by index.
	member map[int]governed
}

// governed is a Target's decision in its Rollout, and its bootstrap
// repository's version before the revision.
type governed struct {
	rollout.MemberDecision
	rollout, repository, from string
}

// gateRollouts holds back, admits or rolls back the bootstrap jobs of the
// Targets each Rollout of the plan governs (jobs[i] is targets[i]'s), from
// the Rollout's state in the store and its admitted Targets' reports; the
// new state is written, and holds, before any bootstrap chart is published.
func gateRollouts(ctx context.Context, plan *Plan, st storeAndOptions, targets []*Target, jobs []publish.Job) (*gated, error) {
	g := &gated{jobs: slices.Clone(jobs), member: map[int]governed{}}
	if len(plan.rollouts) == 0 {
		return g, nil
	}
	now := st.opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	for _, r := range plan.rollouts {
		idx := r.members(targets)
		if len(idx) == 0 {
			continue
		}
		report, decided, err := st.pass(ctx, r, targets, jobs, idx, now)
		if err != nil {
			return nil, fmt.Errorf("Rollout %s/%s: %w", r.Namespace, r.Name, err)
		}
		g.reports = append(g.reports, report)
		if err := g.apply(ctx, st, r.Name, targets, idx, decided); err != nil {
			return nil, fmt.Errorf("Rollout %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	killpoint.Here("rollout-decided") // the states hold, no bootstrap chart published
	return g, nil
}

// checkScope refuses a run of one --target or of a label selector that
// reaches a Target a Rollout governs, before anything is published: the
// rollout decides which of its Targets get a change.
func (p *Plan) checkScope(targets []*Target, opts Options) error {
	if opts.Target == "" && !opts.selector() {
		return nil
	}
	for _, r := range p.rollouts {
		if idx := r.members(targets); len(idx) > 0 {
			return fmt.Errorf("Rollout %s/%s governs %s: publish its whole namespace (without --target or -l), whose Targets the rollout admits wave by wave",
				r.Namespace, r.Name, targets[idx[0]].Name)
		}
	}
	return nil
}

// members are the indexes of the targets r governs.
func (r *governing) members(targets []*Target) []int {
	var out []int
	for i, t := range targets {
		if t.Namespace == r.Namespace && r.governs(t.Target.Labels) {
			out = append(out, i)
		}
	}
	return out
}

// keys are, per governed target of idx, the key of its bootstrap content
// (its job's: the same at any version), each computed once per pass.
func keys(targets []*Target, jobs []publish.Job, idx []int) map[string]string {
	out := make(map[string]string, len(idx))
	for _, i := range idx {
		out[targets[i].Name] = jobs[i].Key()
	}
	return out
}

// revision names what r rolls out to the targets idx: its spec and each
// one's bootstrap content key.
func (r *governing) revision(targets []*Target, idx []int, key map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.spec)
	for _, i := range idx {
		fmt.Fprintf(&b, "%s %s\n", targets[i].Name, key[targets[i].Name])
	}
	return digest.FromString(b.String()).String()
}

// apply sets the jobs of the governed targets idx from their decisions:
// held, none; rolled back, the content they had before the revision again.
func (g *gated) apply(ctx context.Context, st storeAndOptions, name string, targets []*Target, idx []int, decided *decided) error {
	for _, i := range idx {
		t := targets[i]
		repo := chain.BootstrapRepository(t.Namespace, t.Name)
		m, ok := decided.members[t.Name]
		switch {
		case !ok && !decided.changed[t.Name]:
			continue // unchanged: published as it is (unchanged)
		case !ok:
			// Changed, yet no member of the revision (the store moved since it
			// started, or the rollout failed and holds): never published
			// past the rollout.
			m = rollout.MemberDecision{Name: t.Name, State: rollout.Held, Reason: "its chart changed, but it is not a member of the rollout's revision"}
		}
		g.member[i] = governed{MemberDecision: m, rollout: name, repository: repo, from: decided.from[t.Name]}
		switch m.State {
		case rollout.Held:
			g.jobs[i] = publish.Job{}
		case rollout.Reverted:
			job, err := st.previous(ctx, repo, decided.from[t.Name])
			if err != nil {
				return fmt.Errorf("rolling back Target %s: %w", t.Name, err)
			}
			g.jobs[i] = job
		}
	}
	return nil
}

// Held is the action of a bootstrap chart a rollout holds back: its
// repository keeps the version it has.
const Held = "held"

// publish publishes the jobs the gate lets through; a held Target's result
// is Held at the version its repository has.
func (g *gated) publish(ctx context.Context, st store.Store, popts publish.Options) ([]publish.Result, error) {
	var jobs []publish.Job
	var at []int
	for i, j := range g.jobs {
		if j.Pack != nil {
			jobs = append(jobs, j)
			at = append(at, i)
		}
	}
	done := popts.Done
	if done != nil {
		popts.Done = func(k int, r publish.Result) { done(at[k], r) }
	}
	results, err := publish.Publish(ctx, st, jobs, popts)
	out := make([]publish.Result, len(g.jobs))
	for k, r := range results {
		out[at[k]] = r
	}
	for i, m := range g.member {
		if m.State == rollout.Held {
			out[i] = publish.Result{Repository: m.repository, Version: m.from, Action: Held}
		}
	}
	return out, err
}

// report adds a governed Target's rollout state to its report.
func (g *gated) report(i int, tr TargetReport) TargetReport {
	if m, ok := g.member[i]; ok {
		tr.Rollout = &RolloutMember{Rollout: m.rollout, Wave: m.Wave, State: m.State, Reason: m.Reason}
	}
	return tr
}
