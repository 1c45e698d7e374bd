package pipeline

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/objdiff"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/reviewed"
	"github.com/solar-pipeline/solar/renderer/store"
)

// DiffReport is what a publish would change, file by file.
type DiffReport struct {
	Charts []ChartDiff `json:"charts"`
	// Objects are the Kubernetes objects that change (when Diff is asked
	// for them), and Notes what of the chain was not rendered, and why.
	Objects  []ObjectChange `json:"objects,omitempty"`
	Notes    []string       `json:"notes,omitempty"`
	Orphans  []Orphan       `json:"orphans,omitempty"`
	Problems diag.List      `json:"problems"`
	// Rollouts are what each Rollout would decide: a Target it holds has
	// no chart in Charts.
	Rollouts []RolloutReport `json:"rollouts,omitempty"`
}

// ChartDiff is one chart that would change.
type ChartDiff struct {
	Repository string `json:"repository"`
	// From is the latest version in the store, empty for a new chart.
	From string `json:"from"`
	To   string `json:"to"`
	// Targets are the Targets the chart reaches ("<namespace>/<name>"): a
	// release chart the Targets of a namespace share lists them all.
	Targets []string   `json:"targets"`
	Files   []FileDiff `json:"files"`
	// Digest is the manifest digest of the new version, for every chart but
	// an agent chart: its token is minted at publish, so its digest is not
	// known before.
	Digest string `json:"digest,omitempty"`
	// RedactedDigest pins an agent chart's content without its secrets (see
	// RedactedDigest).
	RedactedDigest string `json:"redactedDigest,omitempty"`
	// Token is "rotates" when the chart is an agent chart whose Target gets
	// a new token at publish (a rotation is due), "new" when it gets its
	// first; empty otherwise.
	Token string `json:"token,omitempty"`
}

// FileDiff is the unified diff of one file of a chart, secrets masked.
type FileDiff struct {
	Name string `json:"name"`
	Diff string `json:"diff"`
}

// Changed reports whether anything would change.
func (d *DiffReport) Changed() bool {
	return len(d.Charts) > 0 || slices.ContainsFunc(d.Orphans, func(o Orphan) bool { return o.Pruned != nil })
}

// Diff computes, without writing, what publishing the plan into the store
// would change: per chart the diff of its files between the latest version in
// the store and the new content (at the same version, so only content shows)
// and, with objects, the Kubernetes objects that change.
func Diff(ctx context.Context, plan *Plan, store store.Store, opts Options, objects *ObjectOptions) (*DiffReport, error) {
	opts.DryRun, opts.Compare = true, true
	report, err := Run(ctx, plan, store, opts)
	d := &DiffReport{Charts: []ChartDiff{}, Orphans: report.Orphans, Problems: report.Problems, Rollouts: report.Rollouts}
	if err != nil {
		return d, err
	}
	index := map[string]int{}
	agents := agentCharts(plan, opts)
	var state chainState
	add := func(target string, r publish.Result) error {
		if r.Action == publish.Unchanged || r.Action == "" || r.Action == Held {
			return nil
		}
		if objects != nil {
			state.add(target, r)
		}
		if i, ok := index[r.Repository]; ok {
			d.Charts[i].Targets = append(d.Charts[i].Targets, target)
			return nil
		}
		files, err := chartFileDiffs(r, objects == nil || !objects.NoFiles)
		if err != nil {
			return fmt.Errorf("comparing %s: %w", r.Repository, err)
		}
		index[r.Repository] = len(d.Charts)
		c := ChartDiff{Repository: r.Repository, From: r.Previous(), To: r.Version, Targets: []string{target}, Files: files, Digest: r.Digest}
		if a, ok := agents[r.Repository]; ok {
			if err := a.describe(&c); err != nil {
				return fmt.Errorf("comparing %s: %w", r.Repository, err)
			}
		}
		d.Charts = append(d.Charts, c)
		return nil
	}
	for _, tr := range report.Targets {
		target := tr.Namespace + "/" + tr.Name
		for _, rel := range tr.Releases {
			if err := add(target, *rel.Result); err != nil {
				return d, err
			}
		}
		if err := add(target, tr.Result); err != nil {
			return d, err
		}
	}
	for _, o := range report.Orphans {
		if o.Pruned != nil {
			if err := add(o.Namespace+"/"+o.Name+" (gone)", *o.Pruned); err != nil {
				return d, err
			}
		}
	}
	if objects != nil {
		d.Objects, d.Notes, err = state.objects(ctx, plan, store, opts.Registry, *objects)
	}
	return d, err
}

// agentChart is the agent chart of a Target, which carries its token: its
// job, and whether a publish mints the token anew (a dry run's plan holds a
// stand-in then).
type agentChart struct {
	job     publish.Job
	pending bool
}

// agentCharts are the agent charts of the plan's Targets, by repository.
func agentCharts(plan *Plan, opts Options) map[string]agentChart {
	agents := map[string]agentChart{}
	for _, t := range plan.Targets {
		for _, sel := range t.Releases {
			if t.kubeconfig(sel) != nil {
				j := plan.job(t, sel)
				agents[j.Repository] = agentChart{job: j.Publish(opts.Package), pending: t.Credential.Reason == api.ReasonPending}
			}
		}
	}
	return agents
}

// describe sets what c says of an agent chart: no digest (the token is
// minted at publish) but its RedactedDigest at its new version, and whether
// its token is new.
func (a agentChart) describe(c *ChartDiff) error {
	art, err := a.job.Pack(c.To)
	if err != nil {
		return err
	}
	if c.RedactedDigest, err = reviewed.RedactedDigest(art.Layers); err != nil {
		return err
	}
	c.Digest = ""
	switch {
	case a.pending && c.From != "":
		c.Token = "rotates"
	case a.pending:
		c.Token = "new"
	}
	return nil
}

// Reviewed is the reviewed list of the diff, computed against registry.
func (d *DiffReport) Reviewed(registry string) *reviewed.List {
	rv := &reviewed.List{Format: reviewed.Format, Registry: registry, Charts: []reviewed.Chart{}}
	for _, c := range d.Charts {
		rv.Charts = append(rv.Charts, reviewed.Chart{Repository: c.Repository, From: c.From, Version: c.To,
			Digest: c.Digest, RedactedDigest: c.RedactedDigest, Token: c.Token})
	}
	return rv
}

// chartFileDiffs compares the files of a changed chart's layers, when asked.
func chartFileDiffs(r publish.Result, asked bool) ([]FileDiff, error) {
	if !asked {
		return nil, nil
	}
	return fileDiffs(r.Old, r.New)
}

// fileDiffs compares the files of two chart layers (.tgz).
func fileDiffs(old, new []publish.Blob) ([]FileDiff, error) {
	a, err := published.ChartFiles(old)
	if err != nil {
		return nil, err
	}
	b, err := published.ChartFiles(new)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(a))
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []FileDiff
	for _, n := range names {
		if a[n] == b[n] {
			continue
		}
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(objdiff.Mask(a[n])), B: difflib.SplitLines(objdiff.Mask(b[n])),
			FromFile: "a/" + n, ToFile: "b/" + n, Context: 3,
		})
		if err != nil {
			return nil, err
		}
		out = append(out, FileDiff{Name: n, Diff: text})
	}
	return out, nil
}
