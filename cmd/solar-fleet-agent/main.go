// Command solar-fleet-agent is the reference device agent of the fleet
// upgrade: it answers --probe, and, given NATS, forwards its device's
// attempts to the updater and publishes the outcomes (package agentlink); it
// reports ready (with its version) to the updater's root only when strict
// readiness holds (agentlink's conditions). Real agents embed agentlink and
// reconcile their workloads besides.
//
// Its version is main.version when linked in (-ldflags "-X main.version=V"),
// else the module version go build stamps (wire.BuildVersion): solar fleet
// push-agent reads the same. The tests build it with -ldflags "-X main.behaviour=B"
// to make candidates that misbehave (behaviours.go).
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

	"github.com/solar-pipeline/solar/device/agentlink"
	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

// Set at build time.
var (
	version   = ""      // "": wire.BuildVersion of this binary
	behaviour = "ready" // see behaviours.go
)

// config is what the flags say.
type config struct {
	root, servers, device, bucket, tokenFile, caFile string
	probe, printVersion                              bool
}

func parseFlags() *config {
	c := &config{}
	flag.StringVar(&c.root, "root", "/var/lib/solar-updater", "the updater's root folder")
	flag.BoolVar(&c.probe, "probe", false, "check that this binary can run on this device, and exit")
	flag.BoolVar(&c.printVersion, "version", false, "print the version this agent reports ready with, and exit")
	flag.StringVar(&c.servers, "nats", "", "NATS servers: forward this device's attempts to the updater")
	flag.StringVar(&c.device, "device", "", "this device's id")
	flag.StringVar(&c.bucket, "bucket", "solar-fleet", "the fleet's key-value bucket")
	flag.StringVar(&c.tokenFile, "token-file", "", "the device's bearer JWT (its NATS connect token), written by the device's identity setup; read again at every reconnect")
	flag.StringVar(&c.caFile, "nats-ca", "", "PEM certificates to trust for NATS TLS besides the system's")
	flag.Usage = usage
	flag.Parse()
	return c
}

func main() {
	c := parseFlags()
	if version == "" {
		bi, _ := debug.ReadBuildInfo()
		version = wire.BuildVersion(bi)
	}
	if c.printVersion {
		fmt.Println(version)
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if c.probe {
		if behaviour == "probe-fails" {
			fmt.Fprintln(os.Stderr, "probe: this build cannot run here")
			os.Exit(1)
		}
		daemonize("", "probe")
		fmt.Println(version)
		return
	}
	if behaviour == "crash-at-start" {
		log.Error("crashing at start")
		os.Exit(1)
	}
	daemonize(c.root, "agent")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	paths := updater.Paths{Root: c.root}
	ready := make(chan struct{})
	report := func(context.Context) error {
		if err := markReady(paths); err != nil {
			return err
		}
		close(ready)
		return nil
	}
	go crashAfterCommit(ctx, ready)
	var err error
	if c.servers == "" {
		err = readyOffline(ctx, report, log)
	} else {
		err = runLinked(ctx, c, paths, report, log)
	}
	if err != nil {
		log.Error("agent", "err", err)
		os.Exit(1)
	}
	<-ctx.Done()
}

// runLinked connects to NATS and runs the agent link until ctx ends; the
// link reports ready.
func runLinked(ctx context.Context, c *config, paths updater.Paths, report func(context.Context) error, log *slog.Logger) error {
	o := agentlink.ConnectOptions{Servers: c.servers, DeviceID: c.device, TokenFile: c.tokenFile, CAFile: c.caFile, Log: log}
	bucket := c.bucket
	withhold(&o, &bucket)
	nc, err := agentlink.Connect(o)
	if err != nil {
		return err
	}
	defer nc.Close()
	link := &agentlink.Link{
		Conn: nc, Store: refusing(agentlink.DeviceBucket(nc, bucket), bucket), Bucket: bucket, DeviceID: c.device, Socket: paths.Socket(), Version: version,
		Dependencies: dependencies, Recover: recoverWork, Ready: report, Log: log,
	}
	return link.Run(ctx)
}

// readyOffline reports ready without NATS (the updater's tests that send
// attempts themselves): once the local dependencies and recovery succeed.
func readyOffline(ctx context.Context, report func(context.Context) error, log *slog.Logger) error {
	last := ""
	for {
		err := dependencies(ctx)
		if err == nil {
			err = recoverWork(ctx)
		}
		if err == nil {
			err = report(ctx)
		}
		if err == nil {
			return nil
		}
		if err.Error() != last {
			log.Warn("not ready", "err", err)
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func usage() {
	fmt.Fprintf(flag.CommandLine.Output(), `solar-fleet-agent: the reference fleet agent of a device (docs/updater.md).

It answers --probe, and, given --nats and --device, forwards its device's
upgrade attempts from the fleet's bucket to the updater's socket and
publishes the outcomes. It reports ready to the root updater (ROOT/run/ready,
with its version) once strict readiness holds: NATS connected, the attempt's
snapshot read, the target version checked, recovery and its startup
publication done. The updater runs it; you do not start it by hand.

Usage: solar-fleet-agent --root ROOT [--nats URL --device ID [--token-file FILE] [--nats-ca FILE]] | --probe | --version

`)
	flag.PrintDefaults()
}
