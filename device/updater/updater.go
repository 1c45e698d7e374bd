package updater

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/killpoint"
)

// Options configure an Updater.
type Options struct {
	Paths   Paths
	Service Service
	// Client downloads artifacts (HTTPS only): NewClient's.
	Client *http.Client
	// Download bounds and paces the download's tries (download.go).
	Download DownloadOptions
	// Credential runs probes without root; nil keeps the updater's.
	Credential *syscall.Credential
	// Cgroup holds each probe's process tree (cgroup.go); "" is the
	// fallback: its session.
	Cgroup Cgroup
	// ProbeTimeout bounds agent --probe; ReadyTimeout the wait for
	// readiness after a start.
	ProbeTimeout, ReadyTimeout time.Duration
	// MaxSize caps an artifact's size (512 MiB): an attempt may not fill
	// the device's disk.
	MaxSize int64
	// MaxTries caps the attempts begun per digest (kills and power cuts
	// included), so that repeated cuts do not loop.
	MaxTries int
	// Report receives every outcome (the agent publishes them).
	Report func(wire.Outcome)
	Log    *slog.Logger
}

// Updater replaces the agent, one attempt at a time.
type Updater struct {
	opts Options
	mu   sync.Mutex // one attempt at a time
	// sink is the connection of the attempt under way (under mu).
	sink func(wire.Outcome)
	// newest cancels the prepare of the newest connection's attempt: the
	// next connection preempts it.
	newest struct {
		sync.Mutex
		cancel context.CancelFunc
	}
}

// report gives an outcome to Options.Report and to the connection of the
// attempt under way.
func (u *Updater) report(o wire.Outcome) {
	u.opts.Report(o)
	if u.sink != nil {
		u.sink(o)
	}
}

// New makes the root's folders and resumes what the journal says was under
// way: before commit, the previous binary is selected and started again.
func New(ctx context.Context, opts Options) (*Updater, error) {
	if opts.MaxTries <= 0 {
		opts.MaxTries = 3
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = 512 << 20
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = 30 * time.Second
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 2 * time.Minute
	}
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	if opts.Report == nil {
		opts.Report = func(wire.Outcome) {}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if err := makeFolders(opts.Paths, opts.Credential); err != nil {
		return nil, err
	}
	if err := opts.Cgroup.stop(ctx, leafProbe, 0); err != nil { // a killed updater's probe
		return nil, err
	}
	u := &Updater{opts: opts}
	return u, u.resume(ctx)
}

// resume finishes what a killed updater left: a prepare is dropped (the
// attempt comes again), a transaction before commit rolls back.
func (u *Updater) resume(ctx context.Context) error {
	j, err := readJournal(u.opts.Paths)
	if err != nil {
		return err
	}
	switch j.Phase {
	case wire.PhasePreparing, wire.PhasePrepared:
		j.Phase = wire.PhaseIdle
		if err := u.cleanStaging(); err != nil {
			return err
		}
		return j.write(u.opts.Paths)
	case wire.PhaseStopping, wire.PhaseSelected, wire.PhaseStarting:
		u.opts.Log.Warn("resuming: the switch was interrupted before commit; going back to the previous binary", "phase", j.Phase)
		u.rollback(ctx, j, "interrupted", fmt.Errorf("the updater stopped during the switch (%s), before commit", j.Phase), false)
	case wire.PhaseRollingBack:
		u.rollback(ctx, j, j.Step, errors.New(j.Reason), slices.Contains(j.Failed, j.Attempt.Artifact.Digest))
	}
	return nil
}

func (u *Updater) cleanStaging() error {
	entries, err := os.ReadDir(u.opts.Paths.Versions())
	if err != nil {
		return err
	}
	for _, e := range entries {
		if len(e.Name()) > 0 && e.Name()[0] == '.' {
			if err := os.RemoveAll(filepath.Join(u.opts.Paths.Versions(), e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// Handle carries out one attempt to its end and returns its final outcome:
// committed, rolled-back (with the failing step), rollback-failed or
// refused. Every outcome on the way is also reported, download-retrying
// and waiting-for-window among them. An attempt whose window has not opened
// is held until it opens (window.go). When ctx ends while the attempt waits
// for its window or its binary is being prepared, Handle returns without a
// final outcome (State empty, nothing reported): the journal is idle again
// and the attempt is tried again when it comes again.
func (u *Updater) Handle(ctx context.Context, a wire.Attempt) wire.Outcome {
	return u.handle(ctx, a, nil)
}

// handle is Handle, every outcome also given to sink.
func (u *Updater) handle(ctx context.Context, a wire.Attempt, sink func(wire.Outcome)) wire.Outcome {
	u.mu.Lock()
	defer u.mu.Unlock()
	if ctx.Err() != nil { // preempted, or its peer gone, while it waited
		return wire.Outcome{UUID: a.UUID, DeviceID: a.DeviceID, Version: a.TargetVersion, Reason: ctx.Err().Error()}
	}
	u.sink = sink
	defer func() { u.sink = nil }()
	out := wire.Outcome{UUID: a.UUID, DeviceID: a.DeviceID, Version: a.TargetVersion}
	report := func(state, step string, err error) wire.Outcome {
		out.State, out.Step, out.Reason = state, step, ""
		if err != nil {
			out.Reason = capReason(err.Error())
		}
		u.report(out)
		return out
	}
	if err := a.Verify(); err != nil {
		return report(wire.StateRefused, "", err)
	}
	p := u.opts.Paths
	j, err := readJournal(p)
	switch {
	case err != nil:
		return report(wire.StateRefused, "", err)
	case j.Attempt != nil && j.Attempt.UUID == a.UUID && wire.Final(j.Phase):
		// Done before: its outcome again. The agent that forwarded it was
		// stopped by the switch; the one running now asks again.
		return report(j.Phase, j.Step, reasonOf(j))
	case j.Blocked:
		return report(wire.StateRefused, "", fmt.Errorf("%w (solar-updater --repair)", wire.ErrBlocked))
	case u.runsCommitted(j, a):
		// Another attempt of the binary committed and selected now (the
		// same upgrade planned in a later window, or with another
		// notAfter): nothing to switch, so no try, no window, no restart.
		j.Attempt = &a
		if err := j.write(p); err != nil {
			return report(wire.StateRefused, "", err)
		}
		return report(wire.PhaseCommitted, "", nil)
	case slices.Contains(j.Failed, a.Artifact.Digest):
		return report(wire.StateRefused, "", fmt.Errorf("digest %s failed before: not retried automatically", a.Artifact.Digest))
	case j.Tries[a.Artifact.Digest] >= u.opts.MaxTries:
		return report(wire.StateRefused, "", fmt.Errorf("digest %s was tried %d times: not again", a.Artifact.Digest, u.opts.MaxTries))
	}
	if err := expired(a, time.Now()); err != nil {
		return report(wire.StateRefused, "", err)
	}
	if err := u.awaitWindow(ctx, a, report); err != nil {
		if ctx.Err() != nil { // preempted, its peer gone, or the updater stopping: nothing begun
			return wire.Outcome{UUID: a.UUID, DeviceID: a.DeviceID, Version: a.TargetVersion, Reason: ctx.Err().Error()}
		}
		return report(wire.StateRefused, "", err)
	}
	if j.Tries == nil {
		j.Tries = map[string]int{}
	}
	j.Tries[a.Artifact.Digest]++
	j.Phase, j.Attempt, j.Step, j.Previous, j.Reason = wire.PhasePreparing, &a, "", "", ""
	if err := j.write(p); err != nil {
		return report(wire.StateRefused, "", err)
	}
	report(wire.PhasePreparing, "", nil)
	if err := u.prepare(ctx, a); err != nil {
		return u.prepareFailed(ctx, j, err, report)
	}
	j.Phase = wire.PhasePrepared
	if err := j.write(p); err != nil {
		return report(wire.StateRefused, "", err)
	}
	report(wire.PhasePrepared, "", nil)
	// Once the old agent is stopped, neither the peer's going away (the
	// switch stops it) nor a SIGTERM cuts the switch: it ends in commit or
	// rollback, each step bounded by its own timeout.
	return u.transaction(context.WithoutCancel(ctx), j, report)
}

// transaction stops the old agent, selects and starts the candidate, and
// commits on strict readiness; otherwise it rolls back.
func (u *Updater) transaction(ctx context.Context, j Journal, report func(string, string, error) wire.Outcome) wire.Outcome {
	p, a := u.opts.Paths, *j.Attempt
	prev, err := os.Readlink(p.Current())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return report(wire.StateRefused, "", err)
	}
	j.Previous, j.Phase = prev, wire.PhaseStopping
	if err := j.write(p); err != nil {
		return report(wire.StateRefused, "", err)
	}
	report(wire.StateSwitching, "", nil)
	if err := u.stop(ctx); err != nil {
		u.opts.Log.Warn("stopping the agent", "err", err)
		return u.rollback(ctx, j, "stop", err, false) // not the candidate's fault
	}
	killpoint.Here("transaction-stopped")
	j.Phase = wire.PhaseSelected
	if err := j.write(p); err != nil {
		return u.rollback(ctx, j, "internal", err, false)
	}
	if err := u.selectBinary(p.Binary(a.Artifact.Digest)); err != nil {
		return u.rollback(ctx, j, "select", err, false)
	}
	killpoint.Here("transaction-selected")
	j.Phase = wire.PhaseStarting
	if err := j.write(p); err != nil {
		return u.rollback(ctx, j, "internal", err, false)
	}
	_ = os.Remove(p.Ready())
	if err := u.start(ctx); err != nil {
		u.opts.Log.Warn("starting the candidate", "err", err)
		return u.rollback(ctx, j, "start", err, true)
	}
	killpoint.Here("transaction-started")
	if err := u.waitReady(ctx, p.Binary(a.Artifact.Digest), a.TargetVersion); err != nil {
		u.opts.Log.Warn("the candidate did not report ready", "err", err)
		return u.rollback(ctx, j, "readiness", err, true)
	}
	j.Phase = wire.PhaseCommitted
	if err := j.write(p); err != nil {
		return report(wire.StateRefused, "", err)
	}
	return report(wire.PhaseCommitted, "", nil)
}

// rollback selects and starts the previous binary, and waits until it is
// ready. failed marks the candidate's digest as failed (not retried): a
// failure of the candidate's content, not an interruption or a failure of
// the service. cause is why, reported with the outcome and kept in the
// journal. A rollback that fails blocks the updater.
func (u *Updater) rollback(ctx context.Context, j Journal, step string, cause error, failed bool) wire.Outcome {
	p, a := u.opts.Paths, *j.Attempt
	out := wire.Outcome{UUID: a.UUID, DeviceID: a.DeviceID, Version: a.TargetVersion, Step: step, Reason: capReason(cause.Error())}
	if failed && !slices.Contains(j.Failed, a.Artifact.Digest) {
		j.Failed = append(j.Failed, a.Artifact.Digest)
	}
	j.Phase, j.Step, j.Reason = wire.PhaseRollingBack, step, out.Reason
	err := j.write(p)
	if err == nil {
		err = u.stop(ctx)
	}
	killpoint.Here("rollback-stopped")
	if err == nil && j.Previous != "" {
		err = u.selectBinary(j.Previous)
	}
	if err == nil && j.Previous != "" {
		_ = os.Remove(p.Ready())
		if err = u.start(ctx); err == nil {
			err = u.waitReady(ctx, u.absolute(j.Previous), "")
		}
	}
	if err != nil {
		u.opts.Log.Error("the rollback failed: blocked until repaired", "step", step, "err", err)
		j.Phase, j.Blocked = wire.PhaseRollbackFailed, true
		j.Reason = fmt.Sprintf("%s; the rollback failed: %v", out.Reason, err)
		out.State, out.Reason = wire.PhaseRollbackFailed, capReason(j.Reason)
		if werr := j.write(p); werr != nil {
			out.Reason += "; " + werr.Error()
		}
		u.report(out)
		return out
	}
	j.Phase = wire.PhaseRolledBack
	if werr := j.write(p); werr != nil {
		out.Reason += "; " + werr.Error()
	}
	out.State = wire.PhaseRolledBack
	u.report(out)
	return out
}

// stop and start call the service; a test binary may make them fail
// (killpoint.Fail).
func (u *Updater) stop(ctx context.Context) error {
	if err := killpoint.Fail("service-stop"); err != nil {
		return err
	}
	return u.opts.Service.Stop(ctx)
}

func (u *Updater) start(ctx context.Context) error {
	if err := killpoint.Fail("service-start"); err != nil {
		return err
	}
	return u.opts.Service.Start(ctx)
}

// absolute is a link target as the kernel shows a process's executable.
func (u *Updater) absolute(target string) string {
	if filepath.IsAbs(target) {
		return target
	}
	return filepath.Join(u.opts.Paths.Root, target)
}

// selectBinary points Paths.Current at target atomically: a new symlink
// renamed over it, and the folder synced.
func (u *Updater) selectBinary(target string) error {
	p := u.opts.Paths
	tmp := p.Current() + ".new"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, p.Current()); err != nil {
		return err
	}
	return syncDir(p.Root)
}

// Repair is the documented local repair step after rollback-failed: once an
// operator has made a working agent run again, it clears the block. The
// journal keeps the outcome: the agent, running again, forwards the attempt
// and publishes rollback-failed to the bucket, where solar fleet repair
// clears the operator's side. The digest that failed stays failed.
func Repair(p Paths, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return errors.New("a repair needs a reason")
	}
	j, err := readJournal(p)
	if err != nil {
		return err
	}
	if !j.Blocked {
		return fmt.Errorf("not blocked: the journal is %s", j.Phase)
	}
	j.Blocked = false
	return j.write(p)
}
