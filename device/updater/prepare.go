package updater

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/killpoint"
)

// stepError is a failure of one step of an attempt: download, digest, size,
// install, probe, stop, start, readiness.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

func failStep(step string, err error) error { return &stepError{step: step, err: err} }

// stepOf is the step an error failed at.
func stepOf(err error) string {
	var se *stepError
	if errors.As(err, &se) {
		return se.step
	}
	return "internal"
}

// prepare makes the attempt's binary selectable: downloaded, verified,
// installed in its digest's folder and synced, then probed. The download is
// root's alone (0700/0600) until its digest is the attempt's.
func (u *Updater) prepare(ctx context.Context, a wire.Attempt) error {
	p, digest := u.opts.Paths, a.Artifact.Digest
	if a.Artifact.Size > u.opts.MaxSize {
		return failStep("attempt", fmt.Errorf("the artifact's %d bytes are more than --max-artifact-size %d", a.Artifact.Size, u.opts.MaxSize))
	}
	damaged := false
	if n, sum, err := hashFile(p.Binary(digest)); err == nil {
		// Installed by an earlier try: checked again by its digest. An
		// attempt never deletes it (it may be the one running).
		switch {
		case sum != digest:
			damaged = true // replaced below, once the download is whole
		case n != a.Artifact.Size:
			return failStep("attempt", fmt.Errorf("the attempt's size %d is not the installed binary's of digest %s", a.Artifact.Size, digest))
		default:
			return u.probe(ctx, p.Binary(digest))
		}
	}
	staging := p.Staging(digest)
	if err := os.RemoveAll(staging); err != nil {
		return failStep("install", err)
	}
	if err := os.Mkdir(staging, 0o700); err != nil {
		return failStep("install", err)
	}
	if err := u.download(ctx, a, staging+"/agent"); err != nil {
		os.RemoveAll(staging)
		return err
	}
	killpoint.Here("prepare-downloaded")
	if err := install(p, digest, damaged); err != nil {
		os.RemoveAll(staging)
		return failStep("install", err)
	}
	killpoint.Here("prepare-installed")
	return u.probe(ctx, p.Binary(digest))
}

// install makes a verified download selectable: readable and executable by
// the agent, renamed into its digest's folder (over a damaged one, which is
// removed only then), the folder synced.
func install(p Paths, digest string, damaged bool) error {
	staging := p.Staging(digest)
	if err := os.Chmod(staging+"/agent", 0o755); err != nil {
		return err
	}
	if err := os.Chmod(staging, 0o755); err != nil {
		return err
	}
	old := p.Staging(digest) + ".damaged"
	if damaged {
		if err := os.Rename(p.Version(digest), old); err != nil {
			return err
		}
	}
	if err := os.Rename(staging, p.Version(digest)); err != nil {
		return err
	}
	if damaged {
		_ = os.RemoveAll(old)
	}
	return syncDir(p.Versions())
}

// contentSteps are the failures that are the artifact's own: its digest or
// size is not the attempt's, or it does not run here. Only they mark the
// digest failed (readiness too, in the transaction). A transport failure is
// retried by download; a full disk (install) is the device's.
var contentSteps = []string{"digest", "size", "probe"}

// prepareFailed ends an attempt whose prepare failed. Nothing was switched:
// the previous binary runs on.
//   - ctx ended (the agent went away, the updater stops): back to idle, the
//     try not counted (a kill, which cannot get here, is), nothing reported:
//     the attempt is tried again when it comes again;
//   - the attempt's notAfter passed while retrying: refused, back to idle;
//   - otherwise rolled-back with the step, the digest marked failed only
//     for a content failure.
func (u *Updater) prepareFailed(ctx context.Context, j Journal, err error, report func(string, string, error) wire.Outcome) wire.Outcome {
	p, digest := u.opts.Paths, j.Attempt.Artifact.Digest
	var expiredErr *expiredError
	switch {
	case ctx.Err() != nil:
		j.Tries[digest]--
		j.Phase, j.Step, j.Reason = wire.PhaseIdle, "", ""
		if werr := j.write(p); werr != nil {
			u.opts.Log.Error("writing the journal after a cancelled prepare", "err", werr)
		}
		u.opts.Log.Info("the prepare was cancelled: back to idle", "uuid", j.Attempt.UUID, "err", err)
		return wire.Outcome{UUID: j.Attempt.UUID, DeviceID: j.Attempt.DeviceID, Version: j.Attempt.TargetVersion, Reason: context.Cause(ctx).Error()}
	case errors.As(err, &expiredErr):
		j.Phase, j.Step, j.Reason = wire.PhaseIdle, "", ""
		if werr := j.write(p); werr != nil {
			err = errors.Join(err, werr)
		}
		return report(wire.StateRefused, "", err)
	}
	step := stepOf(err)
	if slices.Contains(contentSteps, step) && !slices.Contains(j.Failed, digest) {
		j.Failed = append(j.Failed, digest)
	}
	j.Phase, j.Step, j.Reason = wire.PhaseRolledBack, step, err.Error()
	if werr := j.write(p); werr != nil {
		err = errors.Join(err, werr)
	}
	return report(wire.PhaseRolledBack, step, err)
}

// hashFile is the size and digest of an installed binary.
func hashFile(file string) (int64, string, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return n, "sha256:" + hex.EncodeToString(h.Sum(nil)), err
}

// maxProbeOutput bounds what a probe's output may hold in the updater's
// memory: the start of it is enough to say why it failed.
const maxProbeOutput = 512

// probeEnv is the whole environment of probes and a supervised agent: the
// updater's own (a root shell's) is not passed on.
var probeEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}

// probe runs the candidate with --probe, without root when a credential is
// configured, bounded in time.
func (u *Updater) probe(ctx context.Context, binary string) error {
	ctx, cancel := context.WithTimeout(ctx, u.opts.ProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--probe")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.opts.Credential, Setsid: true}
	cmd.Env = probeEnv
	cmd.WaitDelay = time.Second
	out := &capped{max: maxProbeOutput}
	cmd.Stdout, cmd.Stderr = out, out
	if err := u.runTree(cmd); err != nil {
		return failStep("probe", fmt.Errorf("%s --probe: %w: %q", binary, err, out.b))
	}
	return nil
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	b   []byte
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
