package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

func newFleetApplyCmd(g *globals) *cobra.Command {
	var lf loadFlags
	var rf registryFlags
	var nf natsFlags
	var insecure, dryRun, exitCode bool
	var concurrency int
	cmd := &cobra.Command{
		Use:   "apply PATH... --registry HOST[:PORT][/PREFIX] --nats URL",
		Short: "Write each device's upgrade attempt into the fleet's NATS bucket",
		Long: `apply reads and validates the objects of PATH (as vet does), resolves every
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
2 changes pending, 1 error.`,
		Example: `  solar fleet apply examples/fleet --registry registry.example.com --nats nats://nats.example.com:4222 --creds ops.creds
  solar fleet apply examples/fleet --registry registry.example.com --nats nats://127.0.0.1:4222 --dry-run --exit-code`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.checkOutput(); err != nil {
				return err
			}
			ctx := cmd.Context()
			opts, err := lf.options(g, cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			opts.DryRun = dryRun
			set, problems, err := pipeline.Load(opts)
			if err != nil {
				return err
			}
			if set == nil || problems.HasErrors() {
				return g.fleetProblems(problems)
			}
			if len(set.DeviceUpgrades) == 0 {
				return fmt.Errorf("no DeviceUpgrade in %v: nothing to apply", args)
			}
			remote, registry, err := rf.remote(cmd.InOrStdin(), insecure)
			if err != nil {
				return err
			}
			planned, more := fleet.Resolve(ctx, set, fleet.StoreAgents(remote, func(repo string) string { return blobURL(registry, repo) }))
			if problems = append(problems, more...).Sorted(); problems.HasErrors() {
				return g.fleetProblems(problems)
			}
			bucket, done, err := nf.connect(ctx, g, !dryRun)
			if err != nil {
				return err
			}
			defer done()
			results := fleet.Apply(ctx, planned, remote, bucket, dryRun, concurrency)
			if err := g.printFleet(results, problems); err != nil {
				return err
			}
			switch {
			case fleet.Failed(results):
				return exitError{code: 1}
			case exitCode && fleet.Changed(results):
				return exitError{code: 2}
			}
			return nil
		},
	}
	lf.register(cmd)
	fl := cmd.Flags()
	rf.register(fl, "of the agent indexes and attempts")
	nf.register(fl)
	fl.IntVar(&nf.replicas, "replicas", 1, "replicas of the bucket when apply creates it (3 on a cluster)")
	fl.BoolVar(&insecure, "insecure-skip-tls-verify", false, "do not verify the registry's TLS certificate (development only)")
	fl.BoolVar(&dryRun, "dry-run", false, "read the registry and the bucket, write nothing, show what would change")
	fl.BoolVar(&exitCode, "exit-code", false, "exit 2 when attempts changed or (with --dry-run) would change, 0 when not")
	fl.IntVar(&concurrency, "concurrency", 8, "devices applied at once")
	return cmd
}

// fleetProblems prints the problems of the input and fails with exit 1.
func (g *globals) fleetProblems(problems diag.List) error {
	if err := g.printFleet([]fleet.Result{}, problems); err != nil {
		return err
	}
	return exitError{code: 1}
}

// printFleet prints apply's results: a table, or one JSON/YAML document
// {"devices": [...], "problems": [...]}.
func (g *globals) printFleet(results []fleet.Result, problems diag.List) error {
	if g.output != "text" {
		if problems == nil {
			problems = diag.List{}
		}
		return g.printData(map[string]any{"devices": results, "problems": problems})
	}
	for _, p := range problems {
		fmt.Fprintln(g.stderr, p)
	}
	failed := 0
	for _, r := range results {
		if r.Error != "" {
			failed++
			fmt.Fprintf(g.stderr, "solar: %s\n", r.Error)
			continue
		}
		fmt.Fprintf(g.stdout, "%-20s %-14s %-12s %s %s %s\n", r.DeviceID, r.TargetVersion, r.Platform, r.UUID, short(r.Digest), r.Action)
	}
	if len(results) > 0 {
		fmt.Fprintf(g.stderr, "%d devices: %d failed\n", len(results), failed)
	}
	return nil
}

func newFleetStatusCmd(g *globals) *cobra.Command {
	var nf natsFlags
	cmd := &cobra.Command{
		Use:   "status [DEVICE...] --nats URL",
		Short: "Show each device's current attempt and reported state",
		Long: `status reads the fleet's bucket: per device (those named, or every device the
bucket knows of) the current attempt, its target version, and the state the
device reports with the step that failed and the version it was about
(preparing, prepared, switching, committed, rolled-back, rollback-failed,
refused; rollback-failed blocks new attempts until solar fleet repair).`,
		Example: `  solar fleet status --nats nats://127.0.0.1:4222
  solar fleet status dev-1 -o json --nats nats://127.0.0.1:4222`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.checkOutput(); err != nil {
				return err
			}
			for _, id := range args {
				if err := fleet.CheckDeviceID(id); err != nil {
					return err
				}
			}
			bucket, done, err := nf.connect(cmd.Context(), g, false)
			if err != nil {
				return err
			}
			defer done()
			st, err := bucket.Status(cmd.Context(), args...)
			if err != nil {
				return err
			}
			if g.output != "text" {
				if st == nil {
					st = []fleet.Status{}
				}
				return g.printData(map[string]any{"devices": st})
			}
			for _, s := range st {
				attempt, version, state := "-", "-", "-"
				if s.Current != nil {
					attempt, version = s.Current.UUID, s.Current.Attempt.TargetVersion
				}
				if s.State != nil {
					state = s.State.State
					if s.State.Step != "" {
						state += " at " + s.State.Step
					}
					if s.State.Version != "" {
						state += " (" + s.State.Version + ")"
					}
				}
				fmt.Fprintf(g.stdout, "%-20s %-36s %-14s %s\n", s.DeviceID, attempt, version, state)
			}
			return nil
		},
	}
	nf.register(cmd.Flags())
	return cmd
}

func newFleetRepairCmd(g *globals) *cobra.Command {
	var nf natsFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "repair DEVICE --reason TEXT --nats URL",
		Short: "Clear a device's rollback-failed block",
		Long: `repair is the operator's explicit action after a device reported rollback-failed
(its updater could not go back to the previous agent): once the device is
repaired by hand, it writes the state "repaired" with the reason into
state.<DEVICE>, compare-and-set over the state it read, and logs it. New
attempts for the device are accepted again. A device that is not blocked is an
error.`,
		Example: `  solar fleet repair dev-1 --reason "reflashed the agent by hand, ticket OPS-42" --nats nats://127.0.0.1:4222`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fleet.CheckDeviceID(args[0]); err != nil {
				return err
			}
			if reason == "" {
				return errors.New("--reason is required: say why the block may be cleared")
			}
			bucket, done, err := nf.connect(cmd.Context(), g, false)
			if err != nil {
				return err
			}
			defer done()
			return bucket.Repair(cmd.Context(), args[0], reason)
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().StringVar(&reason, "reason", "", "why the block may be cleared (logged and stored)")
	return cmd
}
