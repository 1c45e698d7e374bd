package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"unique"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// Report is the outcome of a run: the CLI's -o json contract.
type Report struct {
	Targets []TargetReport `json:"targets"`
	// Orphans are bootstrap repositories of Targets no longer in the input:
	// Flux keeps applying their last version until they are pruned.
	Orphans  []Orphan  `json:"orphans,omitempty"`
	Problems diag.List `json:"problems"`
	// Error is the error that stopped the run (a registry that refused,
	// say): what the report lists is then only what was done before it.
	Error string `json:"error,omitempty"`
	// DryRun: nothing was written; the actions are what a run would do.
	DryRun bool `json:"dryRun,omitempty"`
	// Rollouts are what each Rollout of the input decided.
	Rollouts []RolloutReport `json:"rollouts,omitempty"`
}

// Orphan is the bootstrap repository of a Target that is gone, and, when
// pruned, the version without releases published to it.
type Orphan struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Pruned is the empty version published (--prune), or nil.
	Pruned *publish.Result `json:"pruned,omitempty"`
}

// TargetReport is one Target's bootstrap chart and its release charts.
type TargetReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	publish.Result
	Releases []ReleaseReport  `json:"releases"`
	Excluded []ExcludedReport `json:"excluded"`
	// Credential is the agent credential's condition, when the Target gets one.
	Credential *credential.Credential `json:"credential,omitempty"`
	// Rollout is, for a Target a Rollout governs whose chart it changes,
	// its state in the rollout (held, admitted, passed, failed, rolled back)
	// and why.
	Rollout *RolloutMember `json:"rollout,omitempty"`
}

// RolloutMember is a Target's place in a rollout.
type RolloutMember struct {
	Rollout string `json:"rollout"`
	Wave    string `json:"wave"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
}

// ReleaseReport is one release chart of a Target.
type ReleaseReport struct {
	Key     string `json:"key"`
	Release string `json:"release"`
	// DependsOn are the keys of the releases of the Target it is installed
	// after (its application HelmRelease's dependsOn).
	DependsOn []string `json:"dependsOn,omitempty"`
	// Result is shared by the reports of the Targets that name the same
	// release chart: a report of 100,000 Targets holds each once.
	*publish.Result
}

// ExcludedReport is a release a Target does not get.
type ExcludedReport struct {
	Release string `json:"release"`
	Reason  string `json:"reason"`
}

// NewReport is the report of a plan before anything is published: its
// problems and those of its Targets, sorted.
func NewReport(plan *Plan) *Report {
	r := &Report{Targets: []TargetReport{}, Problems: append(diag.List{}, plan.Problems...)}
	for _, t := range plan.Targets {
		r.Problems = append(r.Problems, t.Problems...)
	}
	r.Problems = r.Problems.Sorted()
	return r
}

// targetReport is a Target's report with its bootstrap chart's result and
// the results of its release charts (in the order of its releases), its
// releases' list taken from shared when another Target's is the same.
func targetReport(t *Target, boot publish.Result, releases []*publish.Result, shared releaseReports) TargetReport {
	tr := TargetReport{Namespace: t.Namespace, Name: t.Name, Result: boot, Credential: t.Credential,
		Releases: shared.of(t, releases), Excluded: []ExcludedReport{}}
	for _, e := range t.Excluded {
		tr.Excluded = append(tr.Excluded, ExcludedReport{Release: resolve.Name(e.Release), Reason: e.Reason})
	}
	return tr
}

// releaseReports are the lists of release reports that a run's Targets
// share: the Targets of a namespace mostly get the same releases, whose
// results they share already, so one list serves them all (a report of
// 100,000 Targets held 100,000 lists of 5, 30 MB). Nothing changes a list
// once made.
type releaseReports map[string][]ReleaseReport

// of is the list of t's releases at the results given.
func (s releaseReports) of(t *Target, releases []*publish.Result) []ReleaseReport {
	var key strings.Builder
	for i, sel := range t.Releases {
		// The result's pointer stands for its chart (and version).
		fmt.Fprintf(&key, "%s\x00%s\x00%p", sel.UniqueName, resolve.Name(sel.Release), releases[i])
		for _, d := range sel.DependsOn {
			key.WriteString("\x00" + d.UniqueName)
		}
		key.WriteString("\x01")
	}
	if list, ok := s[key.String()]; ok {
		return list
	}
	list := make([]ReleaseReport, 0, len(t.Releases))
	for i, sel := range t.Releases {
		// The name of a release many Targets get is held once (interned).
		rr := ReleaseReport{Key: sel.UniqueName, Release: unique.Make(resolve.Name(sel.Release)).Value(), Result: releases[i]}
		for _, d := range sel.DependsOn {
			rr.DependsOn = append(rr.DependsOn, d.UniqueName)
		}
		list = append(list, rr)
	}
	s[key.String()] = list
	return list
}

// CredentialReport is the report of solar credentials sync: the Targets with
// an agent credential, nothing published.
func CredentialReport(plan *Plan) *Report {
	r := NewReport(plan)
	for _, t := range plan.Targets {
		if t.Credential != nil {
			r.Targets = append(r.Targets, TargetReport{Namespace: t.Namespace, Name: t.Name, Credential: t.Credential,
				Releases: []ReleaseReport{}, Excluded: []ExcludedReport{}})
		}
	}
	return r
}

// MintFailed reports whether the credential of a Target could not be minted.
func (r *Report) MintFailed() bool {
	return slices.ContainsFunc(r.Targets, func(t TargetReport) bool {
		return t.Credential != nil && t.Credential.Reason == api.ReasonMintFailed
	})
}

// Changed reports whether any chart was (or, in a dry run, would be) created
// or updated, or got a signature.
func (r *Report) Changed() bool {
	for _, t := range r.Targets {
		if t.Action != publish.Unchanged || t.SignatureAction == publish.Create {
			return true
		}
		for _, rel := range t.Releases {
			if rel.Action != publish.Unchanged || rel.SignatureAction == publish.Create {
				return true
			}
		}
	}
	return false
}

// SummaryLine is Summary in words, for the end of a run: "4 Targets: 2 charts
// created, 1 updated, 7 unchanged; 1 problem (0 errors)".
func (r *Report) SummaryLine() string {
	a := r.Summary()
	created := "created"
	if r.DryRun {
		created = "would be created"
	}
	line := fmt.Sprintf("%s: %s %s, %d updated, %d unchanged; %s (%s)", english.Count(a[1].(int), "Target"),
		english.Count(a[3].(int), "chart"), created, a[5], a[7], english.Count(len(r.Problems), "problem"), english.Count(r.Problems.Count(diag.Error), "error"))
	if r.DryRun {
		line = "dry run, nothing written: " + line
	}
	if r.Error != "" {
		line += "; stopped by an error: " + r.Error
	}
	return line
}

// Summary counts the Targets and the charts per action, each shared release
// chart once, as slog attributes.
func (r *Report) Summary() []any {
	counts := map[string]int{}
	seen := map[string]bool{}
	for _, t := range r.Targets {
		counts[t.Action]++
		for _, rel := range t.Releases {
			if !seen[rel.Repository] {
				seen[rel.Repository] = true
				counts[rel.Action]++
			}
		}
	}
	return []any{"targets", len(r.Targets), publish.Create, counts[publish.Create], publish.Update, counts[publish.Update],
		publish.Unchanged, counts[publish.Unchanged]}
}

// pruned are the results of the orphans' pruned versions.
func (r *Report) pruned() []publish.Result {
	var out []publish.Result
	for _, o := range r.Orphans {
		if o.Pruned != nil {
			out = append(out, *o.Pruned)
		}
	}
	return out
}
