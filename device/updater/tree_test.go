package updater

import (
	"bufio"
	"context"
	"crypto/rand"
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
)

// daemon is a shell line that leaves a sleep behind and prints its pid:
// in the shell's session, or, with setsid, in a session of its own.
const (
	daemon         = "sleep 3600 </dev/null >/dev/null 2>&1 & echo $!"
	setsidDaemon   = "setsid " + daemon
	keepOnRunning  = "; exec sleep 3600 </dev/null >/dev/null 2>&1"
	gonePatience   = 5 * time.Second
	gonePollPeriod = 20 * time.Millisecond
)

// testCgroup is a cgroup folder of the test's, removed at its end; the
// test is skipped where the updater could have none.
func testCgroup(t *testing.T) Cgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups are made by root")
	}
	mount, err := cgroup2Mount()
	if err != nil {
		t.Skip(err)
	}
	own, err := ownCgroup()
	if err != nil {
		t.Skip(err)
	}
	c, err := OpenCgroup(filepath.Join(mount, own, "solar-updater-test-"+rand.Text()[:10]))
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		for _, leaf := range []string{leafAgent, leafProbe} {
			_ = c.stop(context.Background(), leaf, 0)
		}
		assert.NoError(t, c.Remove())
	})
	return c
}

// startPrinting starts cmd and returns the first line it prints: a pid.
func startPrinting(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	killLater(t, pid)
	return pid
}

// killLater kills the test's sleep pid at the end, if it still runs.
func killLater(t *testing.T, pid int) {
	t.Cleanup(func() {
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

func assertGone(t *testing.T, pid int, what string) {
	t.Helper()
	assert.Eventually(t, func() bool { return !liveAs(pid, -1) }, gonePatience, gonePollPeriod, "%s (pid %d) still runs", what, pid)
}

// TestCgroupStopsTheTree: an agent born in the agent leaf that leaves a
// daemon in a session of its own is stopped with it: the leaf is empty
// when stop returns, the daemon gone.
func TestCgroupStopsTheTree(t *testing.T) {
	c := testCgroup(t)
	cmd := exec.Command("sh", "-c", setsidDaemon+keepOnRunning)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	placed, err := c.place(cmd, leafAgent)
	require.NoError(t, err)
	pid := startPrinting(t, cmd)
	placed()
	require.Eventually(t, func() bool { return sessionOf(pid) == pid }, gonePatience, gonePollPeriod, "the daemon leads a session of its own")
	on, err := c.populated(leafAgent)
	require.NoError(t, err)
	require.True(t, on)

	require.NoError(t, c.stop(context.Background(), leafAgent, time.Second))
	on, err = c.populated(leafAgent)
	require.NoError(t, err)
	assert.False(t, on, "the leaf is empty")
	assertGone(t, pid, "the daemon")
}

// TestStopAgentsStopsTheirSessions: the fallback: an agent (an installed
// shell) with children in its session that run no installed binary is
// stopped with them.
func TestStopAgentsStopsTheirSessions(t *testing.T) {
	p := Paths{Root: t.TempDir()}
	sh, err := os.ReadFile("/bin/sh")
	require.NoError(t, err)
	binary := p.Binary("sha256:00")
	require.NoError(t, os.MkdirAll(filepath.Dir(binary), 0o755))
	require.NoError(t, os.WriteFile(binary, sh, 0o755))
	cmd := exec.Command(binary, "-c", daemon+"; "+daemon+"; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	first := startPrinting(t, cmd)
	t.Cleanup(func() {
		for _, pid := range sessionMembers(map[int]bool{cmd.Process.Pid: true}, -1) {
			killLater(t, pid)
		}
	})
	require.Eventually(t, func() bool { return len(agentProcesses(p, -1)) == 1 }, gonePatience, gonePollPeriod, "the children run sleep")

	require.NoError(t, stopAgents(context.Background(), p, -1, time.Second))
	assertGone(t, first, "the agent's child")
	assert.Empty(t, sessionMembers(map[int]bool{cmd.Process.Pid: true}, -1), "the agent's session is empty")
}

// TestProbeTreeStopped: what a probe leaves behind is stopped before the
// probe counts: with a cgroup, a daemon in a session of its own; without,
// a daemon in its session.
func TestProbeTreeStopped(t *testing.T) {
	for name, tc := range map[string]struct {
		cgroup func(*testing.T) Cgroup
		script string
	}{
		"cgroup":   {testCgroup, setsidDaemon},
		"fallback": {func(*testing.T) Cgroup { return "" }, daemon},
	} {
		t.Run(name, func(t *testing.T) {
			u := &Updater{opts: Options{Cgroup: tc.cgroup(t)}}
			cmd := exec.Command("sh", "-c", tc.script)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			var out strings.Builder
			cmd.Stdout = &out
			began := time.Now()
			require.NoError(t, u.runTree(cmd))
			assert.Less(t, time.Since(began), gonePatience, "the daemon did not hold the probe")
			pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
			require.NoError(t, err)
			killLater(t, pid)
			assertGone(t, pid, "the probe's daemon")
		})
	}
}

// TestCgroupLeafAfterKill: a leaf whose processes were killed
// (cgroup.kill) takes the next agent, which lives: the leaf is made anew.
func TestCgroupLeafAfterKill(t *testing.T) {
	c := testCgroup(t)
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "3600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		placed, err := c.place(cmd, leafAgent)
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		placed()
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	first := start()
	require.NoError(t, c.stop(context.Background(), leafAgent, 0), "killed at once")
	assertGone(t, first.Process.Pid, "the first agent")
	next := start()
	require.Eventually(t, func() bool { on, _ := c.populated(leafAgent); return on }, gonePatience, gonePollPeriod)
	assert.True(t, liveAs(next.Process.Pid, -1), "the next agent lives")
	assert.Never(t, func() bool { return !liveAs(next.Process.Pid, -1) }, 300*time.Millisecond, gonePollPeriod, "the next agent lives")
}
