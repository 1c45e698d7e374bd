package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/device/agentlink"
	"github.com/solar-pipeline/solar/device/updater"
)

// The behaviours the tests build in with -ldflags "-X main.behaviour=B". A
// real build is "ready". The others make candidates that the updater must
// roll back (or, crash-after-commit, must not):
//
//	never-ready         never writes the ready file
//	crash-at-start      exits at once
//	crash-after-commit  exits 2 s after it reported ready
//	probe-fails         --probe fails
//	ready-devzero       (hostile) the ready file a link to /dev/zero
//	ready-fifo          (hostile) the ready file a FIFO
//	daemonize           (hostile) never ready; its --probe and its run each
//	                    leave a daemon behind (daemonize)
//
// and one per condition of strict readiness (agentlink), each withheld:
//
//	deps-fail           a local dependency never answers
//	nats-unreachable    its NATS servers are an address nothing listens on
//	snapshot-blocked    its bucket cannot be read (a name that does not
//	                    exist, as a bucket outside the device's permissions
//	                    looks): the snapshot of attempt.<id> never completes
//	recovery-fails      recovering its previous run's work fails
//	publish-refused     JetStream refuses its writes to state.<id> (as the
//	                    auth callout refuses a key not the device's)
//
// The target-version check needs no behaviour: a build whose version is
// not the attempt's target version.
var errWithheld = errors.New("withheld by this test build")

// dependencies checks the agent's local dependencies: the reference agent
// has none.
func dependencies(context.Context) error {
	if behaviour == "deps-fail" {
		return fmt.Errorf("the workload runtime does not answer: %w", errWithheld)
	}
	return nil
}

// recoverWork finishes what the previous run left: the reference agent
// mutates nothing.
func recoverWork(context.Context) error {
	if behaviour == "recovery-fails" {
		return fmt.Errorf("the previous run's workload mutation cannot be finished: %w", errWithheld)
	}
	return nil
}

// withhold points the nats-unreachable and snapshot-blocked builds at a
// server or a bucket that is not there.
func withhold(o *agentlink.ConnectOptions, bucket *string) {
	switch behaviour {
	case "nats-unreachable":
		o.Servers = "nats://127.0.0.1:1"
	case "snapshot-blocked":
		*bucket += "-not-readable"
	}
}

// refusing is the bucket, refusing writes to state keys in the
// publish-refused build.
func refusing(kv agentlink.Store, bucket string) agentlink.Store {
	if behaviour != "publish-refused" {
		return kv
	}
	return refusingKV{kv, bucket}
}

type refusingKV struct {
	agentlink.Store
	bucket string
}

func (r refusingKV) refused(key string) error {
	if strings.HasPrefix(key, "state.") {
		return fmt.Errorf("nats: permissions violation for publish to %q: %w", "$KV."+r.bucket+"."+key, errWithheld)
	}
	return nil
}

func (r refusingKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if err := r.refused(key); err != nil {
		return 0, err
	}
	return r.Store.Put(ctx, key, value)
}

func (r refusingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if err := r.refused(key); err != nil {
		return 0, err
	}
	return r.Store.Create(ctx, key, value, opts...)
}

func (r refusingKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := r.refused(key); err != nil {
		return 0, err
	}
	return r.Store.Update(ctx, key, value, rev)
}

// markReady reports ready, or, for the hostile builds of the tests, plants
// what a compromised agent would in its own folder: a link to /dev/zero or
// a FIFO where the updater reads readiness.
func markReady(p updater.Paths) error {
	switch behaviour {
	case "never-ready", "daemonize":
		return nil
	case "ready-devzero":
		return os.Symlink("/dev/zero", p.Ready())
	case "ready-fifo":
		return syscall.Mkfifo(p.Ready(), 0o644)
	}
	return updater.MarkReady(p, version)
}

// crashAfterCommit ends the crash-after-commit build 2 s after it reported
// ready.
func crashAfterCommit(ctx context.Context, ready <-chan struct{}) {
	if behaviour != "crash-after-commit" {
		return
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return
	}
	select {
	case <-time.After(2 * time.Second):
		fmt.Fprintln(os.Stderr, "crashing after commit")
		os.Exit(1)
	case <-ctx.Done():
	}
}

// daemonize, in the daemonize build, leaves a process behind as a hostile
// candidate would: a shell in a session of its own (setsid) starts sleep in
// the background, deaf to SIGTERM, and exits, a double fork: the sleep is in
// no process group or session of the agent's, runs no installed binary and
// must be killed. Its pid goes to ROOT/run/daemon-<what>.pid; the probe,
// which is given no root, finds it from its own path
// (ROOT/versions/<hex>/agent).
func daemonize(root, what string) {
	if behaviour != "daemonize" {
		return
	}
	if root == "" {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		root = filepath.Dir(filepath.Dir(filepath.Dir(exe)))
	}
	cmd := exec.Command("sh", "-c", "trap '' TERM; sleep 3600 </dev/null >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.Output()
	if err == nil {
		err = os.WriteFile(filepath.Join(root, "run", "daemon-"+what+".pid"), out, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemonize:", err)
	}
}
