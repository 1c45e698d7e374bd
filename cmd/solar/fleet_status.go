package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

const fleetStatusLong = `status reads the fleet's bucket: per device (those named, or every device the
bucket knows of) the current attempt, its target version and how long ago it
was written (ATTEMPT-AGE), the state the device reports with the step that
failed and the version it was about (preparing, prepared, switching, committed,
rolled-back, rollback-failed, refused, repaired; rollback-failed blocks new
attempts until solar fleet repair), how long ago it reported it (STATE-AGE,
from the state's "at", else the time the server stored it), and last the
reason it gave (REASON, cut at 80 characters; whole in -o json, with the times
as RFC 3339 attemptTime and stateTime). Characters of the bucket's strings
that a terminal would act on (escapes, newlines) are printed quoted, Go-style:
"\x1b[2J".

A device whose attempt or state cannot be read (not JSON of its kind, or a
key written by hand whose id is no valid device id, such as state.a.b) is a
row of its own: ATTEMPT or STATE "invalid", the error as REASON (attemptError,
stateError in -o json). The other devices are shown as usual; the run names
the bad ones on stderr and exits 1.

A named device the bucket knows nothing of (no attempt, no reported state) is
named on stderr and fails the run with exit 1; the others are still shown. A
--bucket that does not exist is an error; status creates nothing.

With --watch (-w), as kubectl get -w and flux get -w: status prints the
table, then keeps watching the bucket and prints a device's row again, with
no header, each time its attempt or state changes (a deleted key reads as
"-"). It watches until interrupted (Ctrl-C, SIGTERM: a clean end, though
solar exits 130 or 143 as every interrupted run does) or until the watch
fails with exit 1: the connection to NATS down for 2 minutes (it reconnects
meanwhile, and the changes made meanwhile follow, within some 20 seconds)
or closed, or the bucket deleted. The
devices it could not read and those it does not know are named on stderr
and watched all the same (a device may yet report); they do not fail the
run. With -o json or yaml, --watch prints a stream of documents, each one
device as in "devices": one per device first, then one per change (JSON
documents one after another, as jq reads them; YAML documents separated by
"---").

With --reports DIR, status reads no bucket: it shows the device states
solar import-reports imported into DIR from air-gapped sites' report
archives (solar export-reports --nats), as the table above with a last
column VIA, "the archive of site S, exported at T" (site and exportedAt in
-o json): the state each device had when the archive left its site.`

func newFleetStatusCmd(g *globals) *cobra.Command {
	var nf natsFlags
	var watch bool
	var reports string
	cmd := &cobra.Command{
		Use:   "status [DEVICE...] --nats URL [--watch] | --reports DIR",
		Short: "Show each device's current attempt and reported state",
		Long:  fleetStatusLong,
		Example: `  solar fleet status --nats nats://127.0.0.1:4222
  solar fleet status dev-1 -o json --nats nats://127.0.0.1:4222
  solar fleet status dev-1 dev-2 --watch --nats nats://127.0.0.1:4222
  solar fleet status --reports reports/   # the device states of imported report archives`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.fleetStatus(cmd, &nf, args, watch, reports)
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().StringVar(&reports, "reports", "", importedDevicesHelp)
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the table, print a device's row (-o json|yaml: a document; -o name: its id) each time it changes, until interrupted")
	return listOutputs(cmd, "name")
}

// fleetStatus shows the devices args names (every device without any): from
// the bucket, once or with watch as they change, or from the report
// archives imported into reports.
func (g *globals) fleetStatus(cmd *cobra.Command, nf *natsFlags, args []string, watch bool, reports string) error {
	for _, id := range args {
		if err := wire.CheckDeviceID(id); err != nil {
			return err
		}
	}
	if reports != "" {
		if watch {
			return errors.New("--watch watches the bucket; --reports shows the device states of the imported report archives, which do not change")
		}
		return g.printImportedDevices(reports, args)
	}
	if watch {
		p := &statusWatch{g: g, bucket: nf.bucket}
		return pipeline.WatchFleetStatus(cmd.Context(), nf.nats(g), args, p.listed, p.changed)
	}
	st, err := pipeline.FleetStatus(cmd.Context(), nf.nats(g), args...)
	if err != nil {
		return err
	}
	return g.printStatus(st, nf.bucket)
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
			return pipeline.RepairDevice(cmd.Context(), nf.nats(g), args[0], reason)
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().StringVar(&reason, "reason", "", "why the block may be cleared (logged and stored)")
	return cmd
}

// printStatus prints the devices the bucket knows, as a table or one
// JSON/YAML document {"devices": [...], "notFound": [...]}, and fails naming
// the devices it could not read and those it does not know.
func (g *globals) printStatus(st []fleet.Status, bucket string) error {
	known, bad, notFound := splitStatus(st)
	var err error
	switch g.output {
	case "json", "yaml":
		err = g.printData(map[string]any{"devices": orEmpty(known), "notFound": orEmpty(notFound)})
	case "name":
		for _, s := range known {
			fmt.Fprintln(g.stdout, printable(s.DeviceID))
		}
	default:
		err = g.statusTable(known, time.Now())
	}
	if err != nil {
		return err
	}
	return statusErrors(bucket, bad, notFound, len(st))
}

// splitStatus sorts the devices into those the bucket knows (the rows, bad
// ones included), the printable ids of the bad ones, and the ids of those it
// does not know.
func splitStatus(st []fleet.Status) (known []fleet.Status, bad, notFound []string) {
	for _, s := range st {
		switch {
		case s.Bad():
			bad = append(bad, printable(s.DeviceID))
			known = append(known, s)
		case s.Known():
			known = append(known, s)
		default:
			notFound = append(notFound, s.DeviceID)
		}
	}
	return known, bad, notFound
}

// statusErrors names the devices of a listing of n that the bucket could not
// read (bad) and those it does not know (notFound); nil when there are none.
func statusErrors(bucket string, bad, notFound []string, n int) error {
	var errs []error
	if len(bad) > 0 {
		errs = append(errs, fmt.Errorf("could not read what the bucket %s holds about %s (%d of %s: see their REASON, or attemptError and stateError with -o json)",
			bucket, strings.Join(bad, ", "), len(bad), english.Count(n, "device")))
	}
	if len(notFound) > 0 {
		errs = append(errs, fmt.Errorf("not found in the bucket %s: %s (%d of %s: it holds no attempt for them and no state they reported; check the device ids and --bucket)",
			bucket, strings.Join(notFound, ", "), len(notFound), english.Count(n, "device")))
	}
	return errors.Join(errs...)
}

// statusHeader is the status table's header line.
var statusHeader = []string{"DEVICE", "ATTEMPT", "VERSION", "ATTEMPT-AGE", "STATE", "STATE-AGE", "REASON"}

// reasonWidth is where the table cuts a reason (-o json has it whole).
const reasonWidth = 80

// statusTable writes the devices as a table, kubectl style: a header line
// (unless --no-headers), ages relative to now, the reason last.
func (g *globals) statusTable(st []fleet.Status, now time.Time) error {
	if len(st) == 0 {
		return nil
	}
	out := bufio.NewWriter(g.stdout)
	w := newTable(out)
	g.header(w, strings.Join(statusHeader, "\t"))
	for _, s := range st {
		fmt.Fprintln(w, strings.Join(statusRow(s, now), "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Flush()
}

// statusRow is a device's cells of the status table, every string from the
// bucket printable.
func statusRow(s fleet.Status, now time.Time) []string {
	attempt, version := "-", "-"
	switch {
	case s.AttemptError != "":
		attempt = "invalid"
	case s.Current != nil:
		attempt, version = printable(s.Current.UUID), printable(s.Current.Attempt.TargetVersion)
	}
	state := "-"
	var reasons []string
	for _, e := range []string{s.AttemptError, s.StateError} {
		if e != "" {
			reasons = append(reasons, printable(e))
		}
	}
	switch {
	case s.StateError != "":
		state = "invalid"
	case s.State != nil:
		state = printable(s.State.State)
		if s.State.Step != "" {
			state += " at " + printable(s.State.Step)
		}
		if s.State.Version != "" {
			state += " (" + printable(s.State.Version) + ")"
		}
		if in := opensIn(s, now); in != "" {
			reasons = append(reasons, "opens in "+in)
		}
		if s.State.Reason != "" {
			reasons = append(reasons, printable(s.State.Reason))
		}
	}
	reason := "-"
	if len(reasons) > 0 {
		reason = cut(strings.Join(reasons, "; "), reasonWidth)
	}
	return []string{printable(s.DeviceID), attempt, version, age(s.AttemptTime, now), state, age(s.StateTime, now), reason}
}

// opensIn is how long until the window of a device that waits for it
// opens, kubectl style; "" when it does not wait, or the window is open.
func opensIn(s fleet.Status, now time.Time) string {
	if s.State.State != wire.StateWaitingForWindow || s.Current == nil || s.Current.Attempt.Window == nil {
		return ""
	}
	notBefore, _, err := s.Current.Attempt.Window.Times()
	if err != nil || !notBefore.After(now) {
		return ""
	}
	return duration.ShortHumanDuration(notBefore.Sub(now))
}

// age is how long before now t was, kubectl style (5s, 3m, 2h, 4d); "-"
// for no time.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.ShortHumanDuration(now.Sub(t))
}
