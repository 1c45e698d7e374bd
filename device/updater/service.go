package updater

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Service runs the selected agent binary (Paths.Current).
type Service interface {
	// Stop stops the agent: SIGTERM, killed after the stop limit. An agent
	// that does not run is stopped.
	Stop(ctx context.Context) error
	// Start starts the selected binary.
	Start(ctx context.Context) error
}

// Systemd is the agent's systemd unit: systemctl stop and start. systemd
// bounds the stop (TimeoutStopSec) and restarts the agent after a commit by
// its own policy.
type Systemd struct{ Unit string }

// Stop runs systemctl stop.
func (s Systemd) Stop(ctx context.Context) error { return systemctl(ctx, "stop", s.Unit) }

// Start runs systemctl start.
func (s Systemd) Start(ctx context.Context) error { return systemctl(ctx, "start", s.Unit) }

func systemctl(ctx context.Context, verb, unit string) error {
	out, err := exec.CommandContext(ctx, "systemctl", verb, unit).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl %s %s: %w: %s", verb, unit, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Supervisor runs the agent as a process of its own session, as a service
// manager would, with a pid file: it outlives the updater, so an updater
// killed mid-transaction finds it again. For tests and for devices without
// systemd.
type Supervisor struct {
	Paths Paths
	// Args are the agent's arguments.
	Args []string
	// StopTimeout is how long a SIGTERM may take before SIGKILL.
	StopTimeout time.Duration
	// UID and GID run the agent without root; nil keeps the updater's.
	Credential *syscall.Credential
}

func (s Supervisor) pidFile() string { return filepath.Join(s.Paths.Root, "run", "agent.pid") }

// Start starts Paths.Current in a session of its own and records its pid.
func (s Supervisor) Start(context.Context) error {
	if pid, ok := s.running(); ok {
		return fmt.Errorf("an agent runs already (pid %d)", pid)
	}
	if err := os.MkdirAll(filepath.Dir(s.pidFile()), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(s.Paths.Root, "run", "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.Paths.Current(), s.Args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: s.Credential}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the agent: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reaped while this process lives
	return writeFileSync(s.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// Stop sends SIGTERM to the recorded agent and SIGKILL after StopTimeout.
func (s Supervisor) Stop(ctx context.Context) error {
	pid, ok := s.running()
	if !ok {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(s.StopTimeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return os.Remove(s.pidFile())
}

// running is the recorded agent's pid, when it runs.
func (s Supervisor) running() (int, bool) {
	b, err := os.ReadFile(s.pidFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, alive(pid)
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// Readiness is what a ready agent writes to Paths.Ready.
type Readiness struct {
	Version string `json:"version"`
	PID     int    `json:"pid"`
}

// MarkReady is called by the agent once it is ready: it writes its version
// and pid to the ready file of the root.
func MarkReady(p Paths, version string) error {
	if err := os.MkdirAll(filepath.Dir(p.Ready()), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(Readiness{Version: version, PID: os.Getpid()})
	if err != nil {
		return err
	}
	return writeFileSync(p.Ready(), b, 0o644)
}

// errNotReady: the agent did not report ready in time.
var errNotReady = errors.New("not ready")

// waitReady waits until a running agent reports ready, with version when
// version is not empty.
func waitReady(ctx context.Context, p Paths, version string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "nothing"
	for {
		if b, err := os.ReadFile(p.Ready()); err == nil {
			var r Readiness
			if json.Unmarshal(b, &r) == nil && alive(r.PID) {
				if version == "" || r.Version == version {
					return nil
				}
				last = "version " + r.Version
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w within %s (want version %q, the agent reported %s)", errNotReady, timeout, version, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
