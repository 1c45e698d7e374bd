package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/publish"
)

func newPushCmd(g *globals) *cobra.Command {
	var rf registryFlags
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "push DIR --registry HOST[:PORT][/PREFIX]",
		Short: "Push a reviewed layout (solar render --registry) byte for byte",
		Long: `push pushes the newest version of every repository of the OCI layout DIR that
the registry lacks: exactly the bytes that were rendered and reviewed (solar
render --registry R --out DIR, then solar diff), release charts before the
bootstrap charts that name them. A PR job renders and diffs; the merge job
pushes what was reviewed; an air-gapped site carries the folder in.

Each version must be the one after the registry's latest, as when the layout
was rendered: if the registry moved since (another version appeared), nothing
is pushed and the run fails, saying to render again.`,
		Example: `  solar render --registry registry.example.com/solar --out reviewed examples/ --kubeconfig solar.yaml
  solar diff --registry registry.example.com/solar examples/ --kubeconfig solar.yaml
  echo "$PASSWORD" | solar push reviewed --registry registry.example.com/solar --username ci --password-stdin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.checkOutput(); err != nil {
				return err
			}
			remote, _, err := rf.remote(cmd.InOrStdin())
			if err != nil {
				return err
			}
			layout, err := publish.OpenLayout(cmd.Context(), args[0], publish.LayoutOptions{ReadOnly: true, LockTimeout: 5 * time.Minute})
			if err != nil {
				return err
			}
			defer layout.Close()
			results, err := publish.PushLayout(cmd.Context(), layout, remote, publish.Options{DryRun: dryRun})
			if err != nil {
				return hint(err, rf.registry)
			}
			if g.output != "text" {
				return g.printData(map[string]any{"charts": results})
			}
			for _, r := range results {
				fmt.Fprintf(g.stdout, "%s\t%s\t%s\n", r.Repository, r.Version, r.Action)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	rf.registerClient(fl, "to push to")
	fl.BoolVar(&dryRun, "dry-run", false, "check and list what would be pushed, push nothing")
	return cmd
}
