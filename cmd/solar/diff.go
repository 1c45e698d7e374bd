package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/objdiff"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

const diffLong = `diff renders as publish would and compares every chart that would change with
its latest version in the store (an OCI layout, --out, or a registry,
--registry), and shows the Kubernetes objects that would change on the
Targets' clusters: per object (kind, namespace, name) a unified diff of its
YAML, and the Targets it changes on. The objects are rendered with Helm's
engine as Flux installs them, level by level: the bootstrap chart (level 1),
the release charts its HelmReleases install with the values they pass
(level 2), and the application charts (level 3) where their registry can be
reached anonymously (--no-app-charts: not asked; a note says what was not
rendered). A Secret's values show as fingerprints. The same change on many
Targets shows once, also where each Target's object is named after it: the
header names up to three Targets, else the first and how many more (--verbose
lists them).

--files shows the charts' files instead: per chart a unified diff of its files
(Chart.yaml, values.yaml, templates), the versions, and the Targets each chart
reaches (up to three named, else the first and how many more).
The summary on stderr says how many charts, objects and Targets change.
Tokens and passwords show as
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
	var files, noApp bool
	var fluxNS string
	cmd := &cobra.Command{
		Use:   "diff PATH... (--out DIR | --registry HOST[:PORT][/PREFIX])",
		Short: "Show the Kubernetes objects (or, with --files, the chart files) publishing would change",
		Long:  diffLong,
		Example: `  solar diff examples/ --out out
  solar diff --files examples/ --out out
  solar diff --exit-code -n alpha examples/ --registry registry.example.com/solar --kubeconfig solar.yaml
  solar diff examples/ --registry registry.example.com/solar --kubeconfig solar.yaml --write-reviewed reviewed.json
  solar diff -l 'env notin (staging)' examples/ --out out   # the Targets whose labels match
  solar diff -A examples/ --out out                         # every namespace, as without -n`,
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
				if d, err = pipeline.Diff(cmd.Context(), plan, store.Store, opts, g.objectOptions(files, noApp, fluxNS)); err != nil {
					return hint(err, rf.registry)
				}
			}
			if err := g.printDiff(d, files); err != nil {
				return err
			}
			if err := g.writeReviewed(reviewedFile, registry, d); err != nil {
				return err
			}
			switch {
			case d.Problems.HasErrors():
				return credentialHint(plan.WithoutCredential(), f, exitError{code: 1})
			case exitCode && d.Changed():
				return exitError{code: 2}
			}
			return nil
		},
	}
	f.register(cmd)
	f.selectFlags.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory of the OCI image layout to compare with")
	rf.registerClient(g, fl, "to compare with")
	fl.BoolVar(&exitCode, "exit-code", false, "exit 2 when something would change, 0 when not")
	f.registerPrune(cmd, "show the versions without releases publish --prune would push for orphans")
	fl.BoolVar(&files, "files", false, "show the diff of the charts' files instead of the objects")
	fl.BoolVar(&noApp, "no-app-charts", false, "do not read application charts from their registries: show their HelmReleases' change only")
	fl.StringVar(&fluxNS, "flux-namespace", "flux-system", "namespace of Flux, where the bootstrap chart is installed")
	fl.StringVar(&reviewedFile, "write-reviewed", "", "write the reviewed list, what solar push --reviewed checks, to this file (needs --registry)")
	return cmd
}

// objectOptions ask pipeline.Diff for the objects, unless files; the
// charts' files too only for data (-o json|yaml), which holds them. A bar on
// a terminal shows the chains rendered, once the charts are compared.
func (g *globals) objectOptions(files, noApp bool, fluxNS string) *pipeline.ObjectOptions {
	if files {
		return nil
	}
	oo := &pipeline.ObjectOptions{FluxNamespace: fluxNS, NoFiles: g.output == "text"}
	if !noApp {
		oo.App = (&objdiff.Fetcher{Wrap: g.requestLog()}).Fetch
	}
	var step func(done, total int)
	oo.Progress = func(done, total int) {
		if step == nil {
			step = g.meter("rendered Target chain")
		}
		step(done, total)
	}
	return oo
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
