package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

// One workload owner: the updater stops everything it started, and
// nothing it did not.

// TestCandidateTreeStopped: a candidate whose probe and whose run each
// leave a daemon behind (a double fork into a session of its own, running
// no installed binary) and that never gets ready is rolled back, and
// nothing it started outlives the rollback: the previous agent runs alone.
func TestCandidateTreeStopped(t *testing.T) {
	server := startArtifactServer(t)
	d := newDeviceWith(t, server, deviceOptions{unprivileged: true})
	if d.service.Cgroup == "" {
		t.Skip("no cgroup v2 here: the fallback, sessions, does not stop a daemon that makes a session of its own (docs/updater.md); device/updater's TestStopAgentsStopsTheirSessions tests the fallback")
	}
	o, ok := d.run(t, "", server.attempt(t, builds["v2-daemonize"], "2.0.0", "blobs"))
	require.True(t, ok)
	assert.Equal(t, wire.PhaseRolledBack, o.State, o.Reason)
	assert.Equal(t, "readiness", o.Step)
	for _, what := range []string{"probe", "agent"} {
		pid := daemonPID(t, d.paths, what)
		assert.Eventually(t, func() bool { return !processAlive(pid) }, 5*time.Second, 20*time.Millisecond,
			"the candidate's %s left a daemon (pid %d) running beside the previous agent", what, pid)
	}
	assert.Equal(t, "v1", running(t, d.paths, builds))
	for _, pid := range agentProcesses(d.paths) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		require.NoError(t, err)
		assert.Contains(t, string(b), filepath.Base(string(d.service.Cgroup))+"/agent\n", "the agent runs in the updater's cgroup")
	}
}

// daemonPID is the pid the daemonize build wrote for what ("probe",
// "agent"). The daemon is killed when the test ends, if it still runs.
func daemonPID(t *testing.T, p updater.Paths, what string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.Run(), "daemon-"+what+".pid"))
	require.NoError(t, err, "the candidate's %s started its daemon", what)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	t.Cleanup(func() {
		// Only the test's own sleep, of the agent's user: the pid may be
		// another's by now.
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		var st syscall.Stat_t
		if strings.TrimSpace(string(comm)) == "sleep" && syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st) == nil && st.Uid == agentUID {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// TestOtherUsersAgentLives: with --agent-uid, a process of another user
// (nobody) that runs an installed binary is not the agent: an upgrade stops
// the agent, starts the candidate beside it and commits, and that process
// lives.
func TestOtherUsersAgentLives(t *testing.T) {
	server := startArtifactServer(t)
	d := newDeviceWith(t, server, deviceOptions{unprivileged: true})
	const nobody = 65534
	own := filepath.Join(t.TempDir(), "nobody")
	require.NoError(t, os.MkdirAll(filepath.Join(own, "run"), 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(own), 0o755))
	require.NoError(t, os.Chown(filepath.Join(own, "run"), nobody, nobody))
	binary := d.paths.Binary(digestOf(builds["v1"]))
	other := exec.Command(binary, "--root", own)
	other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}, Setsid: true}
	require.NoError(t, other.Start())
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(own, "run", "ready"))
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "nobody's process runs the installed binary")

	o, ok := d.run(t, "", server.attempt(t, builds["v2"], "2.0.0", "blobs"))
	require.True(t, ok)
	assert.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
	assert.True(t, processAlive(other.Process.Pid), "the updater stopped another user's process")
}

// agentProcesses lists the live processes whose executable is a binary of
// the root's versions.
func agentProcesses(p updater.Paths) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.HasPrefix(exe, p.Versions()+"/") && processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func killAgents(p updater.Paths) {
	for _, pid := range agentProcesses(p) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
