package testenv

import (
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Tool finds an installed CLI, or fails the test saying how to install it.
// A missing tool fails, never skips: make test installs every one. Under
// -short every test that needs a tool (a real service or CLI) skips, found
// or not: `go test -short ./...` is the quick loop and passes on a machine
// where no tool is installed.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: skipped under -short", name)
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run scripts/install-tools.sh and put its bin directory on PATH (make test does): %v", name, err)
	}
	return path
}

// start runs cmd in its own process group and returns its combined output so
// far and stop, which kills the group (the process and all its children) with
// SIGKILL and waits for it; cleanup calls stop too.
func start(t testing.TB, cmd *exec.Cmd) (logs *LockedBuffer, stop func()) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logs = &LockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	stop = sync.OnceFunc(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	t.Cleanup(stop)
	return logs, stop
}

// waitUntil polls ready until it reports true; after timeout it fails the
// test with the service's output.
func waitUntil(t testing.TB, what string, timeout time.Duration, logs *LockedBuffer, ready func() bool) {
	t.Helper()
	waitUntilSaying(t, what, timeout, logs, func() (bool, string) { return ready(), "" })
}

// waitUntilSaying is waitUntil with a ready check that says why it is not
// ready yet: its last answer is in the failure, beside the output.
func waitUntilSaying(t testing.TB, what string, timeout time.Duration, logs *LockedBuffer, ready func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := ready()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not ready within %s (last check: %s); its output:\n%s", what, timeout, why, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// LockedBuffer is a log destination a test reads while a process or a
// goroutine still writes it.
type LockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
