package updater

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/solar-pipeline/solar/device/wire"
)

// DownloadOptions bound and pace the artifact download. Zero values take
// the defaults of solar-updater's flags.
type DownloadOptions struct {
	// Timeout bounds one try, whole (10 min); IdleTimeout aborts a try that
	// receives no byte for that long (60 s).
	Timeout, IdleTimeout time.Duration
	// Backoff is the wait after the first failed try (1 s), doubled after
	// each further one up to MaxBackoff (5 min), with jitter. A Retry-After
	// of a 429 or 503 is waited for when longer (at most maxRetryAfter).
	Backoff, MaxBackoff time.Duration
}

// maxRetryAfter caps the wait a server may ask for.
const maxRetryAfter = time.Hour

func (o DownloadOptions) withDefaults() DownloadOptions {
	or := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	or(&o.Timeout, 10*time.Minute)
	or(&o.IdleTimeout, time.Minute)
	or(&o.Backoff, time.Second)
	or(&o.MaxBackoff, 5*time.Minute)
	return o
}

// transportError is a download failure that is not the artifact's: the
// link, TLS, the server, the login (a connection error, a timeout, a reset,
// any HTTP status but 200). It is retried; it never marks the digest failed.
type transportError struct {
	err error
	// retryAfter is the wait a 429 or 503 asked for (0: none).
	retryAfter time.Duration
}

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// expiredError ends the retries: the attempt's notAfter passed. The attempt
// is refused; the digest is not marked failed.
type expiredError struct{ last error }

func (e *expiredError) Error() string { return "expired while retrying: " + e.last.Error() }
func (e *expiredError) Unwrap() error { return e.last }

// notAfter is the attempt's notAfter, zero when it has none.
func notAfter(a wire.Attempt) (time.Time, error) {
	if a.NotAfter == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, a.NotAfter)
	if err != nil {
		return t, fmt.Errorf("the attempt's notAfter %q is not an RFC 3339 time", a.NotAfter)
	}
	return t, nil
}

// expired says why an attempt must not start now: its notAfter passed (by
// the device's clock) or is no time.
func expired(a wire.Attempt, now time.Time) error {
	t, err := notAfter(a)
	if err == nil && !t.IsZero() && now.After(t) {
		err = fmt.Errorf("the attempt expired at %s: not started", a.NotAfter)
	}
	return err
}

// download fetches the artifact into file, trying again after each
// transport failure (reported as download-retrying, with the reason) after a
// growing, jittered wait, until it arrives whole, a content check fails
// (size, digest), the disk is full (install), ctx ends (its error is
// returned), or the attempt's notAfter passes before the next try
// (expiredError).
func (u *Updater) download(ctx context.Context, a wire.Attempt, file string) error {
	o := u.opts.Download.withDefaults()
	deadline, err := notAfter(a)
	if err != nil {
		return failStep("download", err)
	}
	for try := 1; ; try++ {
		err := u.downloadOnce(ctx, a.Artifact, file, o)
		var te *transportError
		if !errors.As(err, &te) || ctx.Err() != nil {
			return err
		}
		wait := backoff(o, try, te.retryAfter)
		if !deadline.IsZero() && time.Now().Add(wait).After(deadline) {
			return &expiredError{last: err}
		}
		u.report(wire.Outcome{UUID: a.UUID, DeviceID: a.DeviceID, Version: a.TargetVersion, State: wire.StateDownloadRetrying,
			Step: "download", Reason: capReason(fmt.Sprintf("try %d: %v; next try in %s", try, err, wait.Round(time.Millisecond)))})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return failStep("download", ctx.Err())
		case <-t.C:
		}
	}
}

// backoff is the wait after the failures-th failed try: Backoff doubled per
// failure up to MaxBackoff, the upper half of it at random ("equal jitter":
// devices that failed together do not come back together), or the server's
// Retry-After when longer.
func backoff(o DownloadOptions, failures int, retryAfter time.Duration) time.Duration {
	d := o.Backoff
	for i := 1; i < failures && d < o.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, o.MaxBackoff)
	d = d/2 + rand.N(d/2+1)
	return max(d, min(retryAfter, maxRetryAfter))
}

// retryAfter is the wait a 429 or 503 asks for: Retry-After in seconds or as
// an HTTP date.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(min(s, int(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// downloadOnce is one try: a GET of the artifact's URL streamed into file,
// at most its size + 1 bytes read (one over is enough to know it is
// oversized), its SHA-256 computed on the way, the file synced. The try is
// bounded by o.Timeout and aborted when no byte arrives for o.IdleTimeout.
func (u *Updater) downloadOnce(ctx context.Context, art wire.Artifact, file string, o DownloadOptions) error {
	target, err := url.Parse(art.URL)
	if err != nil {
		return failStep("download", errors.New("the artifact URL is not a URL"))
	}
	if err := checkURL(target); err != nil {
		return failStep("download", err)
	}
	parent := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("the download took longer than %s (--download-timeout)", o.Timeout))
	defer cancel()
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	idle := time.AfterFunc(o.IdleTimeout, func() { abort(fmt.Errorf("no byte received for %s (--download-idle-timeout)", o.IdleTimeout)) })
	defer idle.Stop()
	transient := func(err error) error {
		if parent.Err() != nil {
			return failStep("download", parent.Err())
		}
		if cause := context.Cause(ctx); cause != nil {
			// A timeout, not the "context canceled" it causes.
			err = fmt.Errorf("GET %s: %w", redactURL(target), cause)
		}
		return &transportError{err: redactError(err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, art.URL, nil)
	if err != nil {
		return failStep("download", err)
	}
	client := *u.opts.Client
	client.CheckRedirect = checkRedirect
	resp, err := client.Do(req)
	if err != nil {
		return transient(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &transportError{err: fmt.Errorf("GET %s: %s", redactURL(target), resp.Status), retryAfter: retryAfter(resp, time.Now())}
	}
	if resp.ContentLength >= 0 && resp.ContentLength != art.Size {
		// Neither the server's size nor its bytes' digest is told: the
		// agent chooses the URL, and must not learn what it cannot read.
		return failStep("size", fmt.Errorf("the server sends another size than the attempt's %d bytes", art.Size))
	}
	idle.Reset(o.IdleTimeout)
	if err := save(resp.Body, file, art, func() { idle.Reset(o.IdleTimeout) }); err != nil {
		var te *transportError
		if errors.As(err, &te) {
			return transient(fmt.Errorf("GET %s: %w", redactURL(target), te.err))
		}
		return err
	}
	return nil
}

// save writes body into file (created, synced) and checks its size and
// digest. progress is called for every read that brings bytes. A read error
// is a transportError; a write error (a full disk) fails install.
func save(body io.Reader, file string, art wire.Artifact, progress func()) error {
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return failStep("install", err) // a failed try's partial file
	}
	// Root's alone until its digest is the attempt's (prepare opens it).
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return failStep("install", err)
	}
	defer f.Close()
	h := sha256.New()
	w := &fileWriter{f: f}
	r := &progressReader{r: io.LimitReader(body, art.Size+1), progress: progress}
	n, err := io.Copy(io.MultiWriter(w, h), r)
	switch {
	case w.err != nil:
		return failStep("install", w.err) // the disk is full, or failing
	case err != nil:
		return &transportError{err: fmt.Errorf("reading the body: %w", err)} // the link broke: not the artifact's fault
	case n > art.Size:
		return failStep("size", fmt.Errorf("the download is larger than the attempt's %d bytes", art.Size))
	case n < art.Size:
		return failStep("size", fmt.Errorf("the download ended before the attempt's %d bytes", art.Size))
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != art.Digest {
		return failStep("digest", fmt.Errorf("the download's digest is not the attempt's %s", art.Digest))
	}
	if err := f.Sync(); err != nil {
		return failStep("install", err)
	}
	if err := f.Close(); err != nil {
		return failStep("install", err)
	}
	return nil
}

// fileWriter keeps the file's write error apart from the body's read error.
type fileWriter struct {
	f   *os.File
	err error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// progressReader calls progress for every read that brings bytes.
type progressReader struct {
	r        io.Reader
	progress func()
}

func (r *progressReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.progress()
	}
	return n, err
}
