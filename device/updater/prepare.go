package updater

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
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
// installed in its digest's folder and synced, then probed.
func (u *Updater) prepare(ctx context.Context, a wire.Attempt) error {
	p, digest := u.opts.Paths, a.Artifact.Digest
	if _, err := os.Stat(p.Binary(digest)); err == nil {
		// Installed by an earlier try: check it again before trusting it.
		if err := verifyFile(p.Binary(digest), a.Artifact); err != nil {
			if err := os.RemoveAll(p.Version(digest)); err != nil {
				return failStep("install", err)
			}
		} else {
			return u.probe(ctx, p.Binary(digest))
		}
	}
	staging := p.Staging(digest)
	if err := os.RemoveAll(staging); err != nil {
		return failStep("install", err)
	}
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return failStep("install", err)
	}
	if err := u.download(ctx, a.Artifact, staging+"/agent"); err != nil {
		os.RemoveAll(staging)
		return err
	}
	killpoint.Here("prepare-downloaded")
	if err := os.Rename(staging, p.Version(digest)); err != nil {
		os.RemoveAll(staging)
		return failStep("install", err)
	}
	if err := syncDir(p.Versions()); err != nil {
		return failStep("install", err)
	}
	killpoint.Here("prepare-installed")
	return u.probe(ctx, p.Binary(digest))
}

// download streams the artifact into file: at most its size, its SHA-256
// checked on the way, the file synced.
func (u *Updater) download(ctx context.Context, art wire.Artifact, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, art.URL, nil)
	if err != nil {
		return failStep("download", err)
	}
	if req.URL.Scheme != "https" {
		return failStep("download", fmt.Errorf("%s is not https", art.URL))
	}
	resp, err := u.opts.Client.Do(req)
	if err != nil {
		return failStep("download", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return failStep("download", fmt.Errorf("GET %s: %s", art.URL, resp.Status))
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return failStep("install", err)
	}
	defer f.Close()
	h := sha256.New()
	// One byte over the size is enough to know it is oversized.
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, art.Size+1))
	switch {
	case err != nil && !errors.Is(err, syscall.EFBIG) && !errors.Is(err, syscall.ENOSPC):
		return failStep("download", err)
	case err != nil:
		return failStep("install", err) // the disk is full
	case n > art.Size:
		return failStep("size", fmt.Errorf("the download is larger than the attempt's %d bytes", art.Size))
	case n < art.Size:
		return failStep("size", fmt.Errorf("the download ended after %d of %d bytes", n, art.Size))
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != art.Digest {
		return failStep("digest", fmt.Errorf("the download has digest %s, not %s", got, art.Digest))
	}
	if err := f.Sync(); err != nil {
		return failStep("install", err)
	}
	if err := f.Close(); err != nil {
		return failStep("install", err)
	}
	return nil
}

// verifyFile checks an installed binary against the artifact.
func verifyFile(file string, art wire.Artifact) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if n != art.Size || "sha256:"+hex.EncodeToString(h.Sum(nil)) != art.Digest {
		return fmt.Errorf("%s is not the artifact %s", file, art.Digest)
	}
	return nil
}

// probe runs the candidate with --probe, without root when a credential is
// configured, bounded in time.
func (u *Updater) probe(ctx context.Context, binary string) error {
	ctx, cancel := context.WithTimeout(ctx, u.opts.ProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--probe")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.opts.Credential}
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return failStep("probe", fmt.Errorf("%s --probe: %w: %.200s", binary, err, out))
	}
	return nil
}
