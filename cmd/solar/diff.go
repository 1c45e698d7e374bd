package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/solar-pipeline/solar/renderer/pipeline"
)

const diffLong = `diff renders as publish would and compares every chart that would change with
its latest version in the store (an OCI layout, --out, or a registry,
--registry): a unified diff of its files (Chart.yaml, values.yaml, templates),
the versions, and the Targets each chart reaches (a release chart the Targets
of a namespace share lists them all). Tokens and passwords show as
<redacted sha256:...>: a reviewer sees that a token changed, never the token.
With --kubeconfig (read only: diff mints nothing), an agent chart whose Target
is due for a new token says "token rotates", the new token showing as
<a new token, minted at publish>.
Bootstrap repositories of Targets no longer in the input (orphans) are listed;
with --prune, the version without releases that publish --prune would push is
shown. Nothing is written, but for --write-reviewed. With --exit-code: 0 no
change, 2 changes, 1 error.

--write-reviewed FILE (with --registry) writes the reviewed list: per chart a
push would write, its repository, version and digest (an agent chart's digest
with its token values left out, as the token is minted at publish). It holds no
secret: the pull request job keeps it, and the merge job's solar push
--reviewed FILE pushes only what it lists.`

func newDiffCmd(g *globals) *cobra.Command {
	var f planFlags
	var rf registryFlags
	var out string
	var exitCode bool
	var reviewedFile string
	cmd := &cobra.Command{
		Use:   "diff PATH... (--out DIR | --registry HOST[:PORT][/PREFIX])",
		Short: "Show, file by file, what publishing would change on every Target",
		Long:  diffLong,
		Example: `  solar diff examples/ --out out
  solar diff --exit-code -n alpha examples/ --registry registry.example.com/solar --kubeconfig solar.yaml
  solar diff examples/ --registry registry.example.com/solar --kubeconfig solar.yaml --write-reviewed reviewed.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.orOut(out); err != nil {
				return err
			}
			if reviewedFile != "" && rf.registry == "" {
				return fmt.Errorf("--write-reviewed needs --registry: the list is what a push there would write")
			}
			f.dryRun = true
			opts, err := f.options(g, cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			store, err := rf.readStore(cmd.Context(), out, false, cmd.InOrStdin())
			if err != nil {
				return err
			}
			defer store.Close()
			registry := store.Registry
			if registry != "" {
				opts.Registry = registry
			}
			plan, err := pipeline.NewPlan(cmd.Context(), opts)
			if err != nil {
				return hint(err, rf.registry)
			}
			d := &pipeline.DiffReport{Charts: []pipeline.ChartDiff{}, Problems: pipeline.NewReport(plan).Problems}
			if len(plan.Targets) > 0 {
				if d, err = pipeline.Diff(cmd.Context(), plan, store.Store, opts); err != nil {
					return hint(err, rf.registry)
				}
			}
			if err := g.printDiff(d); err != nil {
				return err
			}
			if err := g.writeReviewed(reviewedFile, registry, d); err != nil {
				return err
			}
			switch {
			case d.Problems.HasErrors():
				return credentialHint(plan, f, exitError{code: 1})
			case exitCode && d.Changed():
				return exitError{code: 2}
			}
			return nil
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory of the OCI image layout to compare with")
	rf.registerClient(g, fl, "to compare with")
	fl.BoolVar(&exitCode, "exit-code", false, "exit 2 when something would change, 0 when not")
	f.registerPrune(cmd, "show the versions without releases publish --prune would push for orphans")
	fl.StringVar(&reviewedFile, "write-reviewed", "", "write the reviewed list, what solar push --reviewed checks, to this file (needs --registry)")
	return cmd
}

// writeReviewed writes the reviewed list of d to file, unless file is
// empty. A review with errors writes none and removes an older one: no list
// of a failed review is left to push from.
func (g *globals) writeReviewed(file, registry string, d *pipeline.DiffReport) error {
	if file == "" {
		return nil
	}
	if d.Problems.HasErrors() {
		if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
			return err
		}
		fmt.Fprintf(g.stderr, "solar: %s not written: the review found errors\n", file)
		return nil
	}
	return d.Reviewed(registry).WriteFile(file)
}

// printDiff writes the diff as data (-o json, -o yaml) or as unified diffs,
// coloured on a terminal.
func (g *globals) printDiff(d *pipeline.DiffReport) error {
	if g.output != "text" {
		return g.printData(d)
	}
	color := isTerminal(g.stdout)
	paint := func(line string) string {
		switch {
		case !color:
			return line
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
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
		fmt.Fprintf(g.stdout, "# %s %s -> %s, reaches %s%s\n", c.Repository, from, c.To, strings.Join(c.Targets, ", "), token)
		for _, f := range c.Files {
			for _, line := range strings.SplitAfter(f.Diff, "\n") {
				if line != "" {
					fmt.Fprint(g.stdout, paint(strings.TrimSuffix(line, "\n"))+"\n")
				}
			}
		}
	}
	for _, o := range d.Orphans {
		fmt.Fprintf(g.stdout, "# orphan: %s/bootstrap-%s: Target %s/%s is no longer in the input (publish --prune uninstalls its releases)\n", o.Namespace, o.Name, o.Namespace, o.Name)
	}
	g.printProblems(d.Problems)
	return nil
}

// isTerminal: w is a terminal (colour, a progress bar).
func isTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
