// Package browser drives a real headless Chromium (Debian's chromium
// package, scripts/install-browser.sh) through chromedp, for the tests of
// Solar's web pages: one fresh browser per test, trusting the test services'
// certificates and nothing else a test did not name, with screenshots kept
// as test artifacts.
//
// A test starts one with Start, drives it with Do and Run (chromedp's
// actions: Navigate, WaitVisible, SendKeys, Click, Text, …), logs in on the
// test OpenID Provider (testenv.StartOIDC) with OIDCLogin and keeps what the
// page looked like with Screenshot.
package browser

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// ArtifactsEnv names the directory the screenshots go to, in a directory per
// test (its name): CI keeps it. Unset, they go to the test's t.TempDir().
const ArtifactsEnv = "SOLAR_TEST_ARTIFACTS"

// Install is what a test without chromium says to do.
const Install = "install it: scripts/install-browser.sh"

// Browser is a running headless Chromium with one tab. Its methods that take
// t fail the test and so belong on the test's goroutine.
type Browser struct {
	// Timeout bounds each Do and Run (30 s at the start).
	Timeout time.Duration
	// Started is how long Chromium took to start and open its tab.
	Started time.Duration
	// Artifacts is the directory Screenshot writes to (ArtifactsEnv/<test
	// name>, or a temporary directory of the test's), and chromium.log,
	// what Chromium printed.
	Artifacts string

	tab   context.Context
	mu    sync.Mutex
	shots map[string]int
}

// Start starts Chromium headless with a fresh profile and opens a tab; it
// closes when the test ends. Chromium trusts the certificates trust on top
// of the system's roots (by the hash of their public key: Chromium's
// --ignore-certificate-errors-spki-list), so the test services'
// self-signed certificates (testpki) verify and any other error does not.
// Under -short Start skips the test; without chromium it fails the test and
// says how to install it.
func Start(t testing.TB, trust ...*x509.Certificate) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no browser (the test drives Chromium; run it without -short)")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium in PATH: %s", Install)
	}
	b := &Browser{Timeout: 30 * time.Second, Artifacts: artifactsDir(t), shots: map[string]int{}}
	logFile, err := os.Create(filepath.Join(b.Artifacts, "chromium.log"))
	require.NoError(t, err)
	t.Cleanup(func() { logFile.Close() })

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		// A profile of its own: nothing carries over between tests (and
		// Chromium honours the SPKI list only with a user data dir).
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(logFile),
	)
	if len(trust) > 0 {
		opts = append(opts, chromedp.Flag("ignore-certificate-errors-spki-list", spkiList(trust)))
	}
	if os.Geteuid() == 0 {
		// Chromium refuses to start as root with its sandbox on (the
		// sandbox drops privileges root keeps); CI runs the tests as root.
		// It only loads the test's own servers, so nothing is lost.
		opts = append(opts, chromedp.NoSandbox)
	}
	logs := &testLog{t: t}
	t.Cleanup(logs.stop) // after the browser closed: it runs last
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithErrorf(logs.logf), chromedp.WithLogf(logs.logf))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(tab, 10*time.Second)
		defer cancel()
		_ = chromedp.Cancel(ctx)
		cancelTab()
		cancelAlloc()
	})
	b.tab = tab
	start := time.Now()
	// The first Run starts Chromium: with no timeout of its own, which
	// would outlive it and stop the browser.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(tab) }()
	select {
	case err = <-started:
	case <-time.After(time.Minute):
		err = fmt.Errorf("chromium did not start within a minute (see %s)", logFile.Name())
	}
	require.NoError(t, err, "starting chromium (%s)", path)
	b.Started = time.Since(start)
	return b
}

// Context is the tab's chromedp context, for what Do and Run do not cover;
// bound it with a timeout of its own.
func (b *Browser) Context() context.Context { return b.tab }

// Do runs the steps in the tab, in order, within Timeout. If one fails, Do
// keeps a screenshot (failure-N.png) and fails the test, saying where the
// tab was (the URL without its query, which may hold a code or a state).
func (b *Browser) Do(t testing.TB, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	Run(t, b, chromedp.Steps(steps...))
}

// Run runs action a in b's tab within b.Timeout and returns its value; a
// failure is Do's.
func Run[T any](t testing.TB, b *Browser, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, b.Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v; the tab is at %s; screenshot %s", err, b.where(), b.shoot("failure"))
	}
	return v
}

// Screenshot keeps what the whole page looks like now as name.png (name-2.png
// and so on if the test took one by that name before) in Artifacts, and
// returns its path.
//
// A page the tab is still laying out (a navigation's new document, on a
// busy machine) has no size yet: Chromium refuses to take it ("Cannot take
// screenshot with 0 width"), so it is asked again until the timeout.
func (b *Browser) Screenshot(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, b.Timeout)
	defer cancel()
	var png []byte
	var err error
	for {
		png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err == nil || !strings.Contains(err.Error(), "0 width") || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err, "screenshot %s", name)
	path := b.nextPath(name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	return path
}

// shoot is Screenshot for a test already failing: it returns the path, or
// why there is none.
func (b *Browser) shoot(name string) string {
	ctx, cancel := context.WithTimeout(b.tab, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Sprintf("(none: %v)", err)
	}
	path := b.nextPath(name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Sprintf("(none: %v)", err)
	}
	return path
}

func (b *Browser) nextPath(name string) string {
	name = unsafeChars.ReplaceAllString(name, "_")
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shots[name]++
	if n := b.shots[name]; n > 1 {
		name = fmt.Sprintf("%s-%d", name, n)
	}
	return filepath.Join(b.Artifacts, name+".png")
}

// where is the tab's URL without query or fragment.
func (b *Browser) where() string {
	ctx, cancel := context.WithTimeout(b.tab, 5*time.Second)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return fmt.Sprintf("(unknown: %v)", err)
	}
	return redact(loc)
}

// redact is u without its query and fragment (codes, states, tokens).
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(an unreadable URL)"
	}
	p.RawQuery, p.Fragment, p.User = "", "", nil
	return p.String()
}

// spkiList is Chromium's --ignore-certificate-errors-spki-list: the base64
// SHA-256 of each certificate's SubjectPublicKeyInfo.
func spkiList(certs []*x509.Certificate) string {
	hashes := make([]string, len(certs))
	for i, c := range certs {
		sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
		hashes[i] = base64.StdEncoding.EncodeToString(sum[:])
	}
	return strings.Join(hashes, ",")
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// artifactsDir is $SOLAR_TEST_ARTIFACTS/<test name> (a subtest's in its
// parent's directory), made if need be, or a temporary directory.
func artifactsDir(t testing.TB) string {
	root := os.Getenv(ArtifactsEnv)
	if root == "" {
		return t.TempDir()
	}
	dir := root
	for _, part := range strings.Split(t.Name(), "/") {
		dir = filepath.Join(dir, unsafeChars.ReplaceAllString(part, "_"))
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// testLog passes chromedp's messages to t.Logf until the test ends (a
// message from its goroutines after that would panic).
type testLog struct {
	t       testing.TB
	mu      sync.Mutex
	stopped bool
}

func (l *testLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Logf("chromedp: "+format, args...)
	}
}

func (l *testLog) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
}
