package main

import (
	"github.com/solar-pipeline/solar/internal/english"
	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

func newVetCmd(g *globals) *cobra.Command {
	var f loadFlags
	cmd := &cobra.Command{
		Use:   "vet PATH...",
		Short: "Validate objects against the schemas, references and policies",
		Long: `vet loads every .yaml, .yml and .json file under the given paths and checks, in order:
  1. the CUE schemas of every kind (types, names, selectors, unknown fields),
  2. references between objects (a Profile naming a missing Release, a
     cross-namespace reference without a ReferenceGrant, ...),
  3. the embedded CUE policies and those of every --policy directory,
  4. what resolving each Target finds: a valuesTemplate that does not render,
     a release's dependencies on a uniqueName the Target does not get (unknown,
     or excluded, with the reason) and every dependency cycle.

Every problem is reported at once, one line each: FILE:LINE: FIELD.PATH: message.
Warnings do not change the exit code. Exit code 0: valid; 1: invalid.`,
		Example: `  solar vet examples/
  solar vet -n staging targets.yaml releases/
  solar vet --policy ./my-policies examples/
  solar vet -o json examples/ | jq '.problems[]'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := f.options(g, cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			set, problems, err := pipeline.Load(opts)
			if err != nil {
				return err
			}
			if err := g.printReport(pipeline.NewReport(&pipeline.Plan{Problems: problems}), chartsTable); err != nil {
				return err
			}
			if problems.HasErrors() {
				g.say("%s, %s", english.Count(problems.Count(diag.Error), "error"), english.Count(problems.Count(diag.Warning), "warning"))
				return exitError{code: 1}
			}
			// Silence would not say whether anything was read: the summary
			// says how much passed or failed (conversation, on stderr).
			g.say("%s valid, %s", english.Count(len(set.Objects()), "object"), english.Count(problems.Count(diag.Warning), "warning"))
			return nil
		},
	}
	f.register(cmd)
	return cmd
}
