// Command solar-fleet-agent is the reference device agent of the fleet
// upgrade: it reports ready (with its version) to the updater's root, answers
// --probe, and, given NATS, forwards its device's attempts to the updater and
// publishes the outcomes (package agentlink). Real agents embed agentlink and
// reconcile their workloads besides.
//
// Its version is main.version when linked in (-ldflags "-X main.version=V"),
// else the module version go build stamps (wire.BuildVersion): solar fleet
// push-agent reads the same. The tests build it with -ldflags "-X main.behaviour=B"
// to make candidates that are ready, never ready, crash at start, crash
// after commit or fail their probe.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/device/agentlink"
	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

// Set at build time.
var (
	version   = ""      // "": wire.BuildVersion of this binary
	behaviour = "ready" // ready, never-ready, crash-at-start, crash-after-commit, probe-fails, ready-devzero, ready-fifo
)

func main() {
	root := flag.String("root", "/var/lib/solar-updater", "the updater's root folder")
	probe := flag.Bool("probe", false, "check that this binary can run on this device, and exit")
	printVersion := flag.Bool("version", false, "print the version this agent reports ready with, and exit")
	server := flag.String("nats", "", "NATS servers: forward this device's attempts to the updater")
	device := flag.String("device", "", "this device's id")
	bucket := flag.String("bucket", "solar-fleet", "the fleet's key-value bucket")
	flag.Usage = usage
	flag.Parse()
	if version == "" {
		bi, _ := debug.ReadBuildInfo()
		version = wire.BuildVersion(bi)
	}
	if *printVersion {
		fmt.Println(version)
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *probe {
		if behaviour == "probe-fails" {
			fmt.Fprintln(os.Stderr, "probe: this build cannot run here")
			os.Exit(1)
		}
		fmt.Println(version)
		return
	}
	if behaviour == "crash-at-start" {
		log.Error("crashing at start")
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *server != "" {
		nc, err := nats.Connect(*server, nats.MaxReconnects(-1))
		if err != nil {
			log.Error("connecting to NATS", "err", err)
			os.Exit(1)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			log.Error("JetStream", "err", err)
			os.Exit(1)
		}
		kv, err := js.KeyValue(ctx, *bucket)
		if err != nil {
			log.Error("opening the bucket", "err", err)
			os.Exit(1)
		}
		go func() {
			if err := agentlink.Run(ctx, kv, *device, updater.Paths{Root: *root}.Socket(), log); err != nil {
				log.Error("agent link", "err", err)
			}
		}()
	}
	if err := markReady(updater.Paths{Root: *root}); err != nil {
		log.Error("reporting ready", "err", err)
		os.Exit(1)
	}
	if behaviour == "crash-after-commit" {
		select {
		case <-time.After(2 * time.Second):
			log.Error("crashing after commit")
			os.Exit(1)
		case <-ctx.Done():
		}
	}
	<-ctx.Done()
}

// markReady reports ready, or, for the hostile builds of the tests, plants
// what a compromised agent would in its own folder: a link to /dev/zero or
// a FIFO where the updater reads readiness.
func markReady(p updater.Paths) error {
	switch behaviour {
	case "never-ready":
		return nil
	case "ready-devzero":
		return os.Symlink("/dev/zero", p.Ready())
	case "ready-fifo":
		return syscall.Mkfifo(p.Ready(), 0o644)
	}
	return updater.MarkReady(p, version)
}

func usage() {
	fmt.Fprintf(flag.CommandLine.Output(), `solar-fleet-agent: the reference fleet agent of a device (docs/updater.md).

It reports ready to the root updater (ROOT/run/ready, with its version),
answers --probe, and, given --nats and --device, forwards its device's
upgrade attempts from the fleet's bucket to the updater's socket and
publishes the outcomes. The updater runs it; you do not start it by hand.

Usage: solar-fleet-agent --root ROOT [--nats URL --device ID] | --probe | --version

`)
	flag.PrintDefaults()
}
