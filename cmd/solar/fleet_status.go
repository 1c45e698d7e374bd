package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

func newFleetStatusCmd(g *globals) *cobra.Command {
	var nf natsFlags
	cmd := &cobra.Command{
		Use:   "status [DEVICE...] --nats URL",
		Short: "Show each device's current attempt and reported state",
		Long: `status reads the fleet's bucket: per device (those named, or every device the
bucket knows of) the current attempt, its target version, and the state the
device reports with the step that failed and the version it was about
(preparing, prepared, switching, committed, rolled-back, rollback-failed,
refused; rollback-failed blocks new attempts until solar fleet repair).

A named device the bucket knows nothing of (no attempt, no reported state) is
named on stderr and fails the run with exit 1; the others are still shown. A
--bucket that does not exist is an error; status creates nothing.`,
		Example: `  solar fleet status --nats nats://127.0.0.1:4222
  solar fleet status dev-1 -o json --nats nats://127.0.0.1:4222`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.checkOutput(); err != nil {
				return err
			}
			for _, id := range args {
				if err := wire.CheckDeviceID(id); err != nil {
					return err
				}
			}
			bucket, done, err := nf.connect(cmd.Context(), g, bucketMustExist)
			if err != nil {
				return err
			}
			defer done()
			st, err := bucket.Status(cmd.Context(), args...)
			if err != nil {
				return err
			}
			return g.printStatus(st, nf.bucket)
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
			if err := wire.CheckDeviceID(args[0]); err != nil {
				return err
			}
			if reason == "" {
				return errors.New("--reason is required: say why the block may be cleared")
			}
			bucket, done, err := nf.connect(cmd.Context(), g, bucketMustExist)
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

// printStatus prints the devices the bucket knows, as a table or one
// JSON/YAML document {"devices": [...], "notFound": [...]}, and fails naming
// the devices it does not know.
func (g *globals) printStatus(st []fleet.Status, bucket string) error {
	var known []fleet.Status
	var notFound []string
	for _, s := range st {
		if s.Known() {
			known = append(known, s)
		} else {
			notFound = append(notFound, s.DeviceID)
		}
	}
	if g.output != "text" {
		if err := g.printData(map[string]any{"devices": orEmpty(known), "notFound": orEmpty(notFound)}); err != nil {
			return err
		}
	} else {
		for _, s := range known {
			fmt.Fprintln(g.stdout, statusRow(s))
		}
	}
	if len(notFound) > 0 {
		return fmt.Errorf("not found in the bucket %s: %s (%d of %d devices: it holds no attempt for them and no state they reported; check the device ids and --bucket)",
			bucket, strings.Join(notFound, ", "), len(notFound), len(st))
	}
	return nil
}

// statusRow is a device's row of the status table.
func statusRow(s fleet.Status) string {
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
	return fmt.Sprintf("%-20s %-36s %-14s %s", s.DeviceID, attempt, version, state)
}
