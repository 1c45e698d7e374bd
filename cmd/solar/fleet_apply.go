package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/store"
)

const fleetApplyLong = `apply reads and validates the objects of PATH (as vet does), resolves every
DeviceUpgrade into one attempt per device (the binary for the device's
platform, from the agent index the DeviceUpgrade names in --registry), and for
each device:

  - refuses it while the device reports rollback-failed (solar fleet repair);
  - stores the attempt as an OCI artifact in REPO/attempts, tagged with its UUID
    (derived from its complete content: the same declaration gives the same
    attempt);
  - binds the UUID to that content in the bucket, once: other content under an
    accepted UUID is refused;
  - compare-and-set writes attempt.<deviceId> = {uuid, digest, attempt}: Create
    when the device has none, Update at the revision read otherwise.

Everything is checked before NATS is contacted. A device whose attempt another
writer changed meanwhile fails with "the device's attempt changed underneath
you"; the other devices go on, and the run exits 1. --dry-run reads the
registry and the bucket and writes nothing; with --exit-code: 0 no changes,
2 changes pending, 1 error.`

func newFleetApplyCmd(g *globals) *cobra.Command {
	var lf loadFlags
	var rf registryFlags
	var nf natsFlags
	var dryRun, exitCode bool
	var concurrency int
	cmd := &cobra.Command{
		Use:   "apply PATH... --registry HOST[:PORT][/PREFIX] --nats URL",
		Short: "Write each device's upgrade attempt into the fleet's NATS bucket",
		Long:  fleetApplyLong,
		Example: `  solar fleet apply examples/fleet --registry registry.example.com --nats nats://nats.example.com:4222 --creds ops.creds
  solar fleet apply examples/fleet --registry registry.example.com --nats nats://127.0.0.1:4222 --dry-run --exit-code`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			opts, err := lf.options(g, cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			opts.DryRun = dryRun
			remote, err := rf.remote(ctx, cmd.InOrStdin())
			if err != nil {
				return err
			}
			results, problems, err := pipeline.ApplyFleet(ctx, opts, pipeline.FleetOptions{Store: remote, NATS: nf.nats(g), Concurrency: concurrency, Progress: g.meter("device")})
			if err != nil {
				return hint(store.Explain(err), rf.registry)
			}
			if err := g.printFleet(orEmpty(results), problems, dryRun); err != nil {
				return err
			}
			if problems.HasErrors() {
				return exitError{code: 1}
			}
			switch {
			case results.Failed():
				return exitError{code: 1}
			case exitCode && results.Changed():
				return exitError{code: 2}
			}
			return nil
		},
	}
	lf.register(cmd)
	fl := cmd.Flags()
	rf.registerClient(g, fl, "of the agent indexes and attempts")
	nf.register(fl)
	fl.IntVar(&nf.replicas, "replicas", 1, "replicas of the bucket when apply creates it (3 on a cluster)")
	fl.BoolVar(&dryRun, "dry-run", false, "read the registry and the bucket, write nothing, show what would change")
	fl.BoolVar(&exitCode, "exit-code", false, "exit 2 when attempts changed or (with --dry-run) would change, 0 when not")
	fl.IntVar(&concurrency, "concurrency", 8, "devices applied at once")
	return listOutputs(cmd, "name")
}

// printFleet prints apply's results: a table, the devices' ids (-o name),
// or one JSON/YAML document {"devices": [...], "problems": [...]}.
func (g *globals) printFleet(results []fleet.Result, problems diag.List, dryRun bool) error {
	if g.structured() {
		if problems == nil {
			problems = diag.List{}
		}
		return g.printData(map[string]any{"devices": results, "problems": problems})
	}
	for _, p := range problems {
		fmt.Fprintln(g.stderr, p)
	}
	failed := 0
	w := newTable(g.stdout)
	if g.output != "name" && slices.ContainsFunc(results, func(r fleet.Result) bool { return r.Error == "" }) {
		g.header(w, "DEVICE\tVERSION\tPLATFORM\tATTEMPT\tDIGEST\tACTION")
	}
	for _, r := range results {
		if r.Error != "" {
			failed++
			fmt.Fprintf(g.stderr, "solar: %s\n", r.Error)
			continue
		}
		if g.output == "name" {
			fmt.Fprintln(w, r.DeviceID)
			continue
		}
		action := would(dryRun, r.Action)
		if r.Reason != "" {
			action += " (" + r.Reason + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.DeviceID, r.TargetVersion, r.Platform, r.UUID, short(r.Digest), action)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(results) > 0 {
		g.say("%s: %d failed", english.Count(len(results), "device"), failed)
	}
	return nil
}
