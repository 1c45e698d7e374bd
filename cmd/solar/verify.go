package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/pipeline"
)

func newVerifyCmd(g *globals) *cobra.Command {
	var rf registryFlags
	var out string
	cmd := &cobra.Command{
		Use:   "verify (--out DIR | --registry HOST[:PORT][/PREFIX]) [-n NS]",
		Short: "Check that a layout or registry keeps what solar promises",
		Long: `verify walks the repositories of an OCI layout (--out) or a registry
(--registry), of namespace -n only with it, and checks what solar promises:
every tag is a plain version 0.0.N; every version's manifest and blobs are
there; every bootstrap chart version names release chart versions the store
holds. Each violation is printed with its repository and version. Only solar's
chart repositories are checked; others under the prefix, such as the fleet's
agent binaries and attempts, are named and left unchecked. Exit code 0: no
violation; 1: violations or an error.`,
		Example: `  solar verify --out out
  echo "$PASSWORD" | solar verify --registry registry.example.com/solar -n alpha --username ci --password-stdin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.checkOutput(); err != nil {
				return err
			}
			if err := rf.orOut(out); err != nil {
				return err
			}
			store, _, done, err := rf.readStore(cmd.Context(), out, cmd.InOrStdin())
			if err != nil {
				return err
			}
			defer done()
			prefix := ""
			if g.namespace != "" {
				prefix = g.namespace + "/"
			}
			violations, skipped, err := pipeline.Verify(cmd.Context(), store, prefix)
			if err != nil {
				return hint(err, rf.registry)
			}
			if g.output != "text" {
				if err := g.printData(map[string]any{"violations": orEmpty(violations), "skipped": orEmpty(skipped)}); err != nil {
					return err
				}
			} else {
				for _, v := range violations {
					fmt.Fprintln(g.stdout, v)
				}
				if len(skipped) > 0 {
					fmt.Fprintf(g.stderr, "not checked, not solar's charts: %s\n", strings.Join(skipped, ", "))
				}
			}
			if len(violations) > 0 {
				return exitError{code: 1}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory of the OCI image layout")
	rf.registerClient(fl, "to verify")
	return cmd
}
