package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/rollout"
)

// printDiff writes the diff as data (-o json, -o yaml) or as unified diffs,
// coloured on a terminal: of the objects that change, or with files of the
// charts' files. The summary and the notes go to stderr.
func (g *globals) printDiff(d *pipeline.DiffReport, files bool) error {
	if g.output != "text" {
		return g.printData(d)
	}
	paint := painter(g.colorOn(g.stdout))
	if files {
		g.printChartDiffs(d, paint)
	} else {
		g.printObjectDiffs(d, paint)
	}
	for _, o := range d.Orphans {
		fmt.Fprintf(g.stdout, "# orphan: %s/bootstrap-%s: Target %s/%s is no longer in the input (publish --prune uninstalls its releases)\n", o.Namespace, o.Name, o.Namespace, o.Name)
	}
	for _, ro := range d.Rollouts {
		held := 0
		for _, m := range ro.Members {
			if m.State == rollout.Held {
				held++
			}
		}
		fmt.Fprintf(g.stdout, "# rollout %s/%s: %s (%s); %s held, not shown\n", ro.Namespace, ro.Name, ro.Phase, ro.Message, english.Count(held, "Target"))
	}
	for _, n := range d.Notes {
		g.say("note: %s", cut(printable(n), 1000))
	}
	g.printProblems(d.Problems)
	g.say("%s", diffSummary(d, files))
	return nil
}

// printChartDiffs writes per chart the diff of its files, once for the
// charts it is alike on (pipeline.GroupCharts).
func (g *globals) printChartDiffs(d *pipeline.DiffReport, paint func(string) string) {
	for _, grp := range pipeline.GroupCharts(d.Charts) {
		c := grp.Shown
		from := c.From
		if from == "" {
			from = "(new)"
		}
		token := ""
		switch c.Token {
		case "rotates":
			token = "; token rotates"
		case "new":
			token = "; new token"
		}
		entries := slices.Clone(c.Targets)
		for _, o := range grp.Others {
			for _, t := range o.Targets {
				entries = append(entries, t+" ("+o.Repository+")")
			}
		}
		reaches, others := g.targetsOf(entries, len(grp.Others) > 0)
		fmt.Fprintln(g.stdout, paint(fmt.Sprintf("# %s %s -> %s, reaches %s%s", c.Repository, from, c.To, printable(reaches), token)))
		if g.verbose {
			g.listTargets(others, paint)
		}
		for _, f := range c.Files {
			writeDiff(g.stdout, f.Diff, paint)
		}
	}
}

// printObjectDiffs writes per object that changes the diff of its YAML,
// once for the Targets it changes alike on (pipeline.GroupChanges); a token
// minted at publish, which shows only as a Secret's new fingerprint, is said
// on stderr.
func (g *globals) printObjectDiffs(d *pipeline.DiffReport, paint func(string) string) {
	for _, grp := range pipeline.GroupChanges(d.Objects) {
		o := grp.Shown
		on, others := g.targetsOf(alikeTargets(grp), len(grp.Others) > 0)
		waits := ""
		if len(o.WaitsFor) > 0 {
			// The install order (spec.dependsOn), which the diff shows
			// only where it changes.
			waits = "; waits for " + printable(strings.Join(o.WaitsFor, ", "))
		}
		fmt.Fprintln(g.stdout, paint(fmt.Sprintf("# %s %s (level %d) on %s%s", o.Action, printable(o.Object.String()), o.Level, printable(on), waits)))
		if g.verbose {
			g.listTargets(others, paint)
		}
		writeDiff(g.stdout, o.Diff, paint)
	}
	tokens := map[string][]pipeline.ChartDiff{}
	for _, c := range d.Charts {
		tokens[c.Token] = append(tokens[c.Token], c)
	}
	for _, t := range []struct{ token, says string }{
		{"rotates", "the agent token rotates at publish"},
		{"new", "the agent gets its first token at publish"},
	} {
		charts := tokens[t.token]
		if len(charts) > 3 {
			// One line, not one per Target.
			g.say("%s and %s: %s", strings.Join(charts[0].Targets, ", "), english.Count(len(charts)-1, "more Target"), t.says)
			continue
		}
		for _, c := range charts {
			g.say("%s: %s (%s)", strings.Join(c.Targets, ", "), t.says, c.Repository)
		}
	}
}

// targetsOf names the Targets of a change: all of them up to three, else
// the first and how many more, the others listed (with --verbose) on lines
// of their own: no header line with 500 names. entries are the Targets,
// each with its object where that is named otherwise than the first's;
// alike, whether some are.
func (g *globals) targetsOf(entries []string, alike bool) (header string, list []string) {
	if len(entries) <= 3 {
		return strings.Join(entries, ", "), nil
	}
	header = fmt.Sprintf("%s and %s", entries[0], english.Count(len(entries)-1, "more Target"))
	if alike {
		header += ", the same but for each Target's name and namespace"
	}
	if !g.verbose {
		header += "; --verbose lists them"
	}
	return header, entries[1:]
}

// alikeTargets are the Targets of a group: those of the change shown, then
// each of the others, with its object where that is named otherwise.
func alikeTargets(grp pipeline.ChangeGroup) []string {
	out := slices.Clone(grp.Shown.Targets)
	for _, o := range grp.Others {
		for _, t := range o.Targets {
			if o.Object.String() != grp.Shown.Object.String() {
				t += " (" + o.Object.String() + ")"
			}
			out = append(out, t)
		}
	}
	return out
}

// listTargets writes Targets as comment lines of at most about 100
// characters.
func (g *globals) listTargets(targets []string, paint func(string) string) {
	line := ""
	for i, t := range targets {
		t = printable(t)
		if i < len(targets)-1 {
			t += ","
		}
		if line != "" && len(line)+1+len(t) > 100 {
			fmt.Fprintln(g.stdout, paint(line))
			line = ""
		}
		if line == "" {
			line = "#  "
		}
		line += " " + t
	}
	if line != "" {
		fmt.Fprintln(g.stdout, paint(line))
	}
}

// writeDiff writes a unified diff line by line, painted.
func writeDiff(w io.Writer, diff string, paint func(string) string) {
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line != "" {
			fmt.Fprint(w, paint(strings.TrimSuffix(line, "\n"))+"\n")
		}
	}
}

// diffSummary says how many charts, objects and Targets change.
func diffSummary(d *pipeline.DiffReport, files bool) string {
	targets := map[string]bool{}
	for _, c := range d.Charts {
		for _, t := range c.Targets {
			targets[t] = true
		}
	}
	if !d.Changed() {
		return "no change: every chart is as the store has it"
	}
	if files {
		return fmt.Sprintf("%s, %s would change", english.Count(len(d.Charts), "chart"), english.Count(len(targets), "Target"))
	}
	return fmt.Sprintf("%s, %s, %s would change", english.Count(len(d.Charts), "chart"), english.Count(len(d.Objects), "object"), english.Count(len(targets), "Target"))
}

// painter colours a unified diff's lines when color is on.
func painter(color bool) func(string) string {
	return func(line string) string {
		switch {
		case !color:
			return line
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"), strings.HasPrefix(line, "# "):
			return "\x1b[1m" + line + "\x1b[0m"
		case strings.HasPrefix(line, "+"):
			return "\x1b[32m" + line + "\x1b[0m"
		case strings.HasPrefix(line, "-"):
			return "\x1b[31m" + line + "\x1b[0m"
		case strings.HasPrefix(line, "@@"):
			return "\x1b[36m" + line + "\x1b[0m"
		}
		return line
	}
}
