package updater

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/solar-pipeline/solar/internal/killpoint"
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
// manager would: it outlives the updater, so an updater killed
// mid-transaction finds it again, by what it runs (agentProcesses): no pid
// file. For devices without systemd, and the tests.
type Supervisor struct {
	Paths Paths
	// Args are the agent's arguments.
	Args []string
	// StopTimeout is how long a SIGTERM may take before SIGKILL.
	StopTimeout time.Duration
	// UID and GID run the agent without root; nil keeps the updater's.
	Credential *syscall.Credential
	// Cgroup holds the agent's process tree (cgroup.go); "" is the
	// fallback: its session.
	Cgroup Cgroup
}

// uid is the agent's user, -1 when it runs as the updater's.
func (s Supervisor) uid() int {
	if s.Credential == nil {
		return -1
	}
	return int(s.Credential.Uid)
}

// Start starts Paths.Current in a session of its own, born in the
// cgroup's agent leaf when there is one, its output appended to Paths.Log.
// What a previous agent left in the leaf (a daemon of an agent that
// crashed) is killed first: the leaf holds one agent's tree.
func (s Supervisor) Start(ctx context.Context) error {
	for pid := range agentProcesses(s.Paths, s.uid()) {
		return fmt.Errorf("an agent runs already (pid %d)", pid)
	}
	logf, err := openLog(s.Paths.Log())
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.Paths.Current(), s.Args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = probeEnv // nothing of the updater's environment
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: s.Credential}
	if s.Cgroup != "" {
		if err := s.Cgroup.stop(ctx, leafAgent, 0); err != nil {
			return fmt.Errorf("what the previous agent left: %w", err)
		}
		placed, err := s.Cgroup.place(cmd, leafAgent)
		if err != nil {
			return err
		}
		defer placed()
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the agent: %w", err)
	}
	// Nothing records it: a kill here leaves an agent that the next Stop
	// finds all the same.
	killpoint.Here("supervisor-started")
	go func() { _ = cmd.Wait() }() // reaped while this process lives
	return nil
}

// Stop stops every agent process and its tree: the cgroup's agent leaf
// (SIGTERM, cgroup.kill after StopTimeout), then any agent outside it
// (started by hand, or before the updater had a cgroup) with the session it
// leads (SIGTERM, SIGKILL after StopTimeout).
func (s Supervisor) Stop(ctx context.Context) error {
	if s.Cgroup != "" {
		if err := s.Cgroup.stop(ctx, leafAgent, s.StopTimeout); err != nil {
			return err
		}
	}
	return stopAgents(ctx, s.Paths, s.uid(), s.StopTimeout)
}

// StartIfNone starts the selected agent when none runs: at boot, or after a
// crash that the updater outlived.
func (s Supervisor) StartIfNone(ctx context.Context) error {
	if len(agentProcesses(s.Paths, s.uid())) > 0 {
		return nil
	}
	if _, err := os.Lstat(s.Paths.Current()); err != nil {
		return fmt.Errorf("no agent is selected (%s): install the first one by hand", s.Paths.Current())
	}
	return s.Start(ctx)
}
