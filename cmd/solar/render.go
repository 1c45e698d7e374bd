package main

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

func newRenderCmd(g *globals) *cobra.Command {
	var f planFlags
	var rf registryFlags
	var sf signFlags
	var out string
	var lockTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "render PATH...",
		Short: "Render and package the charts of every Target into an OCI image layout",
		Long:  renderLong,
		Example: `  solar render examples/
  solar render --dry-run -o json examples/ | jq '.targets[] | {name, action}'
  solar render -n alpha --target edge-1 --out /tmp/layout examples/
  solar render -l 'env=prod,region in (eu,us)' examples/   # the Targets whose labels match
  solar render -A --dry-run examples/                       # every namespace, as without -n
  solar render --registry registry.example.com/solar --out reviewed examples/ --kubeconfig solar.yaml
  SOURCE_DATE_EPOCH=1700000000 solar render examples/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := f.options(g, cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			if opts.SigningKey, err = sf.key(g); err != nil {
				return err
			}
			so := pipeline.StoreOptions{Out: out, ReadOnly: f.dryRun, LockTimeout: lockTimeout,
				Waiting: func() { fmt.Fprintf(g.stderr, "waiting for another solar run to finish with %s\n", out) }}
			if rf.registry != "" {
				if rf.passwordStdin && slices.Contains(args, "-") {
					return fmt.Errorf("objects from stdin (-) and --password-stdin: only one can read stdin")
				}
				if so.Over, err = rf.remote(cmd.Context(), cmd.InOrStdin()); err != nil {
					return err
				}
				opts.Registry = so.Over.Registry
			}
			// A namespace (or a batch of them) at a time: see Options.Batch.
			opts.Batch = true
			plan, err := pipeline.NewPlan(cmd.Context(), opts)
			if err != nil || plan.Selected() == 0 {
				return g.finish(pipeline.NewReport(plan), "", err)
			}
			store, err := pipeline.OpenStore(cmd.Context(), so)
			if err != nil {
				return err
			}
			defer store.Close()
			report, err := pipeline.Run(cmd.Context(), plan, store.Store, opts)
			// What completed is saved, also when the run was stopped.
			if serr := store.Save(cmd.Context()); err == nil {
				err = serr
			}
			// The plan (the whole input) is let go before the report prints.
			without := plan.WithoutCredential()
			return credentialHint(without, f, g.finish(report, rf.registry, err))
		},
	}
	f.register(cmd)
	f.registerChanged(cmd)
	f.selectFlags.register(cmd)
	f.registerPrune(cmd, "for every orphan (the bootstrap repository of a Target no longer in the input), write a version without releases")
	cmd.Flags().StringVar(&out, "out", "out", "directory of the OCI image layout")
	rf.registerClient(g, cmd.Flags(), "to compute versions against (read only), named by the bootstrap charts")
	sf.register(cmd.Flags())
	cmd.Flags().DurationVar(&lockTimeout, "lock-timeout", 5*time.Minute, "how long to wait while another solar run holds the layout")
	return listOutputs(cmd, "name", "wide")
}

// credentialHint names the flags that answer a run which failed (exit 1)
// because Targets that get the agent have no credential: neither
// --kubeconfig (nor $KUBECONFIG) nor --no-credentials was given.
// n is how many Targets that (plan.WithoutCredential).
func credentialHint(n int, f planFlags, err error) error {
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 1 || n == 0 || f.kubeconfig != "" || f.noCredentials {
		return err
	}
	get := "get"
	if n == 1 {
		get = "gets"
	}
	return fmt.Errorf("%s %s the agent but no credential: pass --kubeconfig FILE (or set $KUBECONFIG), the kubeconfig "+
		"of the SolAr API server where agent credentials are minted, or --no-credentials to render agents without a token", english.Count(n, "Target"), get)
}

const renderLong = `render validates the objects (as vet does), resolves what every Target gets, and
writes one release chart per Release and one bootstrap-<target> chart per Target
into --out (default out/), one standard OCI image layout per repository, the
version as the tag:
  out/<namespace>/bootstrap-<target>              (oras: --oci-layout out/alpha/bootstrap-edge-1:0.0.1)
  out/<namespace>/<release-namespace>/release-<release>
No registry is used (with --kubeconfig, the API server is, to mint agent
credentials first; see solar credentials sync). The layout is the state: a chart whose content equals its
latest version is unchanged and nothing is written; otherwise the next patch
version (0.0.N) is. Packaging is byte-reproducible: the same input gives the same
digests on any machine (SOURCE_DATE_EPOCH sets the manifests' created time).

With --registry, the registry is the state instead, read only: versions are
computed against it, the bootstrap charts name it, and the charts that would be
published land in --out, for review (solar diff) and for solar push, which
pushes exactly those bytes.

The plan lists per Target its bootstrap chart, its releases and the releases it
does not get, with the reason. Invalid input writes nothing. A Target that does
not resolve is reported and skipped; the others are rendered. Exit code 0:
success; 1: invalid input or a Target failed.`
