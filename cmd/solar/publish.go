package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/pipeline"
)

func newPublishCmd(g *globals) *cobra.Command {
	var f planFlags
	var rf registryFlags
	var sf signFlags
	var exitCode bool
	var concurrency int
	cmd := &cobra.Command{
		Use:   "publish PATH... --registry HOST[:PORT][/PREFIX]",
		Short: "Render the charts of every Target and push them to an OCI registry",
		Long:  publishLong,
		Example: `  solar publish examples/ --registry registry.example.com/solar
  echo "$TOKEN" | solar publish -n alpha examples/ --registry 127.0.0.1:5000 --username ci --password-stdin --ca-file ca.pem
  solar publish --dry-run --exit-code examples/ --registry registry.example.com/solar   # 2: changes pending
  solar publish -l tier=device examples/ --registry registry.example.com/solar         # the Targets labelled tier=device
  solar publish -A examples/ --registry registry.example.com/solar                     # every namespace, as without -n`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// stdin holds the password with --password-stdin.
			stdin := cmd.InOrStdin()
			if rf.passwordStdin {
				if slices.Contains(args, "-") {
					return fmt.Errorf("objects from stdin (-) and --password-stdin: only one can read stdin")
				}
				stdin = nil
			}
			store, err := rf.remote(cmd.Context(), cmd.InOrStdin())
			if err != nil {
				return err
			}
			opts, err := f.options(g, stdin, args)
			if err != nil {
				return err
			}
			if opts.SigningKey, err = sf.key(g); err != nil {
				return err
			}
			opts.Registry, opts.Concurrency = store.Registry, concurrency
			// A namespace (or a batch of them) at a time: see Options.Batch.
			opts.Batch = true
			plan, err := pipeline.NewPlan(cmd.Context(), opts)
			if err != nil || plan.Selected() == 0 {
				return g.finish(pipeline.NewReport(plan), rf.registry, err)
			}
			report, err := pipeline.Run(cmd.Context(), plan, store.Store, opts)
			// The plan (the whole input) is let go before the report prints.
			without := plan.WithoutCredential()
			err = credentialHint(without, f, g.finish(report, rf.registry, err))
			if err == nil && exitCode && report.Changed() {
				return exitError{code: 2}
			}
			return err
		},
	}
	f.register(cmd)
	f.registerChanged(cmd)
	f.selectFlags.register(cmd)
	f.registerPrune(cmd, "for every orphan (the bootstrap repository of a Target no longer in the input), push a version without releases: Flux then uninstalls them")
	fl := cmd.Flags()
	rf.registerClient(g, fl, "to push to")
	sf.register(fl)
	fl.BoolVar(&exitCode, "exit-code", false, "exit 2 when charts changed or got a signature or (with --dry-run) would change, 0 when not")
	fl.IntVar(&concurrency, "concurrency", 4, "charts pushed at once")
	return listOutputs(cmd, "name", "wide")
}

const publishLong = `publish does what render does, against a registry instead of a directory:
it validates, resolves and renders, then pushes with ORAS, per Target namespace:
  <prefix>/<ns>/<release-ns>/release-<release>:<version>
  <prefix>/<ns>/bootstrap-<target>:<version>
Flux on a Target pulls oci://<registry>/<prefix>/<ns>/bootstrap-<target>
(see solar bootstrap-manifests).

The registry is the only state. A chart whose layer equals the latest version's
is unchanged and nothing is written for it; otherwise the next patch version is
pushed. A blob already in a repository is never uploaded again. Every release
chart exists before a bootstrap chart naming it is pushed. After each push solar
confirms the tag holds its manifest; if another writer (a second CI job) took
that version with other content, solar pushes at the next version, so neither
update is lost.

Credentials: --username with --password-stdin, else the docker config
($DOCKER_CONFIG/config.json, with credsStore and credHelpers; solar registry
login writes it), else helm's registry config. A registry that refuses them
fails the run; solar never falls back to anonymous.

Use -n NS to publish one namespace: one CI job per namespace, sharing nothing
but the registry. Exit code 0: success; 1: invalid input, a Target failed or the
registry failed. With --exit-code: 0 when nothing changed, 2 when charts were
(or, with --dry-run, would be) created or updated, 1 on error.`
