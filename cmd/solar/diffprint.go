package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/solar-pipeline/solar/renderer/pipeline"
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
	for _, n := range d.Notes {
		g.say("note: %s", cut(printable(n), 1000))
	}
	g.printProblems(d.Problems)
	g.say("%s", diffSummary(d, files))
	return nil
}

// printChartDiffs writes per chart the diff of its files.
func (g *globals) printChartDiffs(d *pipeline.DiffReport, paint func(string) string) {
	for _, c := range d.Charts {
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
		fmt.Fprintln(g.stdout, paint(fmt.Sprintf("# %s %s -> %s, reaches %s%s", c.Repository, from, c.To, strings.Join(c.Targets, ", "), token)))
		for _, f := range c.Files {
			writeDiff(g.stdout, f.Diff, paint)
		}
	}
}

// printObjectDiffs writes per object that changes the diff of its YAML; a
// token minted at publish, which shows only as a Secret's new fingerprint,
// is said on stderr.
func (g *globals) printObjectDiffs(d *pipeline.DiffReport, paint func(string) string) {
	for _, o := range d.Objects {
		fmt.Fprintln(g.stdout, paint(fmt.Sprintf("# %s %s (level %d) on %s", o.Action, printable(o.Object.String()), o.Level, strings.Join(o.Targets, ", "))))
		writeDiff(g.stdout, o.Diff, paint)
	}
	for _, c := range d.Charts {
		switch c.Token {
		case "rotates":
			g.say("%s: the agent token rotates at publish (%s)", strings.Join(c.Targets, ", "), c.Repository)
		case "new":
			g.say("%s: the agent gets its first token at publish (%s)", strings.Join(c.Targets, ", "), c.Repository)
		}
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
		return fmt.Sprintf("%s, %s would change", plural(len(d.Charts), "chart"), plural(len(targets), "Target"))
	}
	return fmt.Sprintf("%s, %s, %s would change", plural(len(d.Charts), "chart"), plural(len(d.Objects), "object"), plural(len(targets), "Target"))
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
