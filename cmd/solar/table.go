package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// The tables a report prints as.
const (
	chartsTable      = iota // per Target its charts and excluded releases
	credentialsTable        // per Target its credential's condition
)

// printReport writes the report as the JSON document of the CLI contract
// (whole, --changed or not), as a table (-o wide: with more columns) or as
// names (-o name), followed by the problems.
func (g *globals) printReport(r *pipeline.Report, table int) error {
	if g.structured() {
		return g.printReportData(r)
	}
	// Buffered: a table of 10,000 Targets is a few writes, not 60,000.
	out := bufio.NewWriter(g.stdout)
	if g.output == "name" {
		g.printReportNames(out, r, table)
	} else if slices.ContainsFunc(r.Targets, g.shown) {
		streamTable(out, func(w io.Writer) {
			if table == credentialsTable {
				g.header(w, "TARGET\tSTATUS\tREASON\tMESSAGE")
				for _, t := range r.Targets {
					fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\n", t.Namespace, t.Name, t.Credential.Status, t.Credential.Reason, messageCell(t.Credential.Message))
				}
			} else {
				g.printCharts(w, r)
			}
		})
	}
	if g.output != "name" {
		g.printOrphans(out, r)
		for _, ro := range r.Rollouts {
			fmt.Fprintf(out, "rollout %s/%s: %s (%s)\n", ro.Namespace, ro.Name, ro.Phase, ro.Message)
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if hidden := g.hiddenUnchanged(r, table); hidden > 0 {
		g.say("%s not shown (--changed)", english.Count(hidden, "unchanged Target"))
	}
	g.printProblems(r.Problems)
	return nil
}

// printCharts writes the table of charts: per Target its bootstrap chart,
// its credential, its release charts and the releases it does not get; -o
// wide adds the Release of each chart and its signature, and shows the full
// digests. ACTION stays last: an excluded release's reason is long.
func (g *globals) printCharts(w io.Writer, r *pipeline.Report) {
	wide := g.output == "wide"
	if wide {
		g.header(w, "TARGET\tCHART\tVERSION\tDIGEST\tRELEASE\tSIGNATURE\tACTION")
	} else {
		g.header(w, "TARGET\tCHART\tVERSION\tDIGEST\tACTION")
	}
	// chart writes a chart's row; note a row of a credential or an
	// excluded release, which has no version.
	chart := func(first, release string, res publish.Result) {
		if wide {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", first, res.Repository, res.Version, res.Digest, release, dash(res.Signature), would(r.DryRun, res.Action))
		} else {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", first, res.Repository, res.Version, short(res.Digest), would(r.DryRun, res.Action))
		}
	}
	note := func(first, what, message string) {
		if wide {
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t-\t%s\n", first, what, message)
		} else {
			fmt.Fprintf(w, "%s\t%s\t-\t-\t%s\n", first, what, message)
		}
	}
	for _, t := range r.Targets {
		if !g.shown(t) {
			continue
		}
		boot := t.Result
		if m := t.Rollout; m != nil {
			boot.Action = fmt.Sprintf("%s (rollout %s, wave %s: %s)", boot.Action, m.Rollout, m.Wave, m.State)
		}
		chart(t.Namespace+"/"+t.Name, "-", boot)
		if c := t.Credential; c != nil {
			// The API server's errors may span lines (errors.Join).
			note("  credential", c.Reason, messageCell(c.Message))
		}
		for _, rel := range t.Releases {
			if !g.changedOnly || changed(*rel.Result) {
				chart("  "+rel.Key, rel.Release, *rel.Result)
			}
		}
		for _, e := range t.Excluded {
			note("  excluded", e.Release, e.Reason)
		}
	}
}

// printReportNames writes -o name: each chart of the table once, as
// REPOSITORY:VERSION (what oras and helm pull take below the registry), or
// for the credentials table each Target, as NAMESPACE/NAME.
func (g *globals) printReportNames(w io.Writer, r *pipeline.Report, table int) {
	// Each name once, in the order first met: a namespace's Targets name
	// the same release charts (a set, not a search of the names so far,
	// which at 100,000 Targets compared 10^11 strings).
	seen := map[string]bool{}
	add := func(res publish.Result) {
		if name := res.Repository + ":" + res.Version; res.Repository != "" && !seen[name] {
			seen[name] = true
			fmt.Fprintln(w, name)
		}
	}
	for _, t := range r.Targets {
		switch {
		case table == credentialsTable:
			fmt.Fprintf(w, "%s/%s\n", t.Namespace, t.Name)
		case g.shown(t):
			add(t.Result)
			for _, rel := range t.Releases {
				if !g.changedOnly || changed(*rel.Result) {
					add(*rel.Result)
				}
			}
		}
	}
	for _, o := range r.Orphans {
		if o.Pruned != nil && (!g.changedOnly || changed(*o.Pruned)) {
			add(*o.Pruned)
		}
	}
}

// printOrphans names the bootstrap repositories of Targets that are gone:
// a pruned one is a result (stdout), one left as it is conversation.
func (g *globals) printOrphans(w io.Writer, r *pipeline.Report) {
	for _, o := range r.Orphans {
		if o.Pruned != nil {
			if !g.changedOnly || changed(*o.Pruned) {
				fmt.Fprintf(w, "orphan %s/bootstrap-%s: the Target is gone; pruned to %s without releases (%s)\n", o.Namespace, o.Name, o.Pruned.Version, would(r.DryRun, o.Pruned.Action))
			}
		} else if !g.quiet {
			fmt.Fprintf(g.stderr, "orphan %s/bootstrap-%s: the Target is gone, Flux keeps applying its last version; --prune uninstalls its releases\n", o.Namespace, o.Name)
		}
	}
}

// shown says whether the table lists a Target: always, but with --changed
// only when its bootstrap chart or a release chart changed.
func (g *globals) shown(t pipeline.TargetReport) bool {
	return !g.changedOnly || changed(t.Result) || slices.ContainsFunc(t.Releases, func(rel pipeline.ReleaseReport) bool { return changed(*rel.Result) })
}

// hiddenUnchanged is the number of Targets --changed left out of the table.
func (g *globals) hiddenUnchanged(r *pipeline.Report, table int) int {
	if !g.changedOnly || table != chartsTable || g.structured() {
		return 0
	}
	n := 0
	for _, t := range r.Targets {
		if !g.shown(t) {
			n++
		}
	}
	return n
}

// changed says whether a chart was (or would be) written: a new version or
// a new signature.
func changed(r publish.Result) bool {
	return r.Action != publish.Unchanged || r.SignatureAction == publish.Create
}

// messageCell is a message (a credential's: the API server's errors, which
// may span lines) as a table's cell: printable, so it stays on its row;
// an empty one empty.
func messageCell(s string) string {
	if s == "" {
		return s
	}
	return printable(s)
}

// dash is s, or "-" for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
