package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The updater runs as root; the agent and its group do not. These tests
// attack a root updater from the agent's user (agentUID, group agentGroup)
// and from a user outside the group, as the findings did.

// as runs name as uid and gid (and supplementary groups), returning its
// combined output.
func as(t *testing.T, uid, gid int, groups []uint32, stdin, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}}
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// asAgent runs a shell command as the agent's user.
func asAgent(t *testing.T, script string) (string, error) {
	return as(t, agentUID, agentGroup, nil, "", "sh", "-c", script)
}

// TestAttackLogLink: the agent links where the updater used to open the
// supervised agent's log as root (run/agent.log) to a root file; an upgrade
// starts an agent, and the root file is untouched. The log folder is
// root's alone.
func TestAttackLogLink(t *testing.T) {
	server := startArtifactServer(t)
	d := newDeviceWith(t, server, deviceOptions{unprivileged: true})
	victim := filepath.Join(t.TempDir(), "cron")
	require.NoError(t, os.WriteFile(victim, []byte("root's own\n"), 0o644))
	_, err := asAgent(t, "ln -s "+victim+" "+d.paths.Run()+"/agent.log")
	require.NoError(t, err, "the agent writes its own folder")
	out, err := asAgent(t, "ln -s "+victim+" "+d.paths.Log()+".x")
	require.Error(t, err, "the agent cannot write the log folder: %s", out)

	o, ok := d.run(t, "", server.attempt(t, builds["v2"], "2.0.0", "blobs"))
	require.True(t, ok)
	require.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "root's own\n", string(b), "the updater wrote through the agent's link")
	fi, err := os.Lstat(d.paths.Log())
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestAttackPidFile: the agent records a root process's pid where the
// updater used to read the agent's pid (run/agent.pid). An upgrade stops
// the real agent and nothing else: the root process lives, one agent runs.
func TestAttackPidFile(t *testing.T) {
	server := startArtifactServer(t)
	d := newDeviceWith(t, server, deviceOptions{unprivileged: true})
	rootProc := exec.Command("sleep", "300")
	require.NoError(t, rootProc.Start())
	t.Cleanup(func() { _ = rootProc.Process.Kill(); _ = rootProc.Wait() })
	_, err := asAgent(t, fmt.Sprintf("echo %d > %s/agent.pid", rootProc.Process.Pid, d.paths.Run()))
	require.NoError(t, err)

	o, ok := d.run(t, "", server.attempt(t, builds["v2"], "2.0.0", "blobs"))
	require.True(t, ok)
	assert.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
	assert.True(t, processAlive(rootProc.Process.Pid), "the updater killed the root process the agent named")
	assert.Equal(t, "v2", running(t, d.paths, builds))
}

// TestAttackReadyFile: a candidate that makes its ready file a link to
// /dev/zero or a FIFO neither exhausts the updater's memory nor hangs it:
// readiness fails within --ready-timeout and the previous agent runs again.
func TestAttackReadyFile(t *testing.T) {
	server := startArtifactServer(t)
	for _, build := range []string{"v2-ready-devzero", "v2-ready-fifo"} {
		t.Run(build, func(t *testing.T) {
			d := newDeviceWith(t, server, deviceOptions{unprivileged: true})
			began := time.Now()
			o, ok := d.run(t, "", server.attempt(t, builds[build], "2.0.0", "blobs"))
			require.True(t, ok, "the updater answered")
			assert.Less(t, time.Since(began), 20*time.Second)
			assert.Equal(t, wire.PhaseRolledBack, o.State, o.Reason)
			assert.Equal(t, "readiness", o.Step)
			assert.Contains(t, o.Reason, map[string]string{"v2-ready-devzero": "too many levels of symbolic links", "v2-ready-fifo": "not a regular file"}[build])
			assert.Equal(t, "v1", running(t, d.paths, builds))
		})
	}
}

// TestAttackSocket: the socket's folder is root's, entered by the group;
// the agent can neither remove, replace nor add to it; a user outside the
// group cannot connect; a member by a supplementary group can. Behind the
// file modes, the updater checks the peer's gid and groups, not its uid.
func TestAttackSocket(t *testing.T) {
	server := startArtifactServer(t)
	d := newDeviceWith(t, server, deviceOptions{unprivileged: true})
	d.start(t)
	for path, want := range map[string]os.FileMode{d.paths.Socket(): 0o660, d.paths.SocketDir(): 0o750} {
		fi, err := os.Lstat(path)
		require.NoError(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		assert.Equal(t, want, fi.Mode().Perm(), path)
		assert.Equal(t, [2]uint32{0, agentGroup}, [2]uint32{st.Uid, st.Gid}, path)
	}
	for _, script := range []string{"rm -f %[1]s/updater.sock", "mkdir %[1]s/x", "ln -s /etc %[1]s/y", "mv %[1]s/updater.sock %[1]s/z"} {
		out, err := asAgent(t, fmt.Sprintf(script, d.paths.SocketDir()))
		assert.Error(t, err, "%s: %s", script, out)
	}
	entries, err := os.ReadDir(d.paths.SocketDir())
	require.NoError(t, err)
	require.Len(t, entries, 1)

	garbage := "garbage\n"
	out, _ := as(t, outsiderUID, outsiderUID, nil, garbage, peerBin, d.paths.Socket())
	assert.Contains(t, out, "permission denied", "a user outside the group connects")
	out, _ = as(t, outsiderUID, outsiderUID, []uint32{agentGroup}, garbage, peerBin, d.paths.Socket())
	assert.Contains(t, out, "not an attempt", "a member by a supplementary group is served")

	// Open the folder and socket to everybody: the peer check stands alone.
	require.NoError(t, os.Chmod(d.paths.SocketDir(), 0o755))
	require.NoError(t, os.Chmod(d.paths.Socket(), 0o666))
	out, _ = as(t, agentGroup, 5000, nil, garbage, peerBin, d.paths.Socket())
	assert.Contains(t, out, "is not in group", "a peer whose uid is the group's number is no member")
	out, _ = as(t, 5000, agentGroup, nil, garbage, peerBin, d.paths.Socket())
	assert.Contains(t, out, "not an attempt", "a peer whose gid is the group is a member")
}

// TestAttackRestarts: while the agent's user tries all along to put
// something where the socket goes (a folder at the old path, links and
// folders in the socket's folder), the updater restarts 20 times and serves
// every time.
func TestAttackRestarts(t *testing.T) {
	server := startArtifactServer(t)
	d := newDeviceWith(t, server, deviceOptions{unprivileged: true})
	attack := exec.Command("sh", "-c", fmt.Sprintf(`while :; do
		mkdir -p %[1]s/run/updater.sock/x %[1]s/sock/updater.sock/x
		ln -sfn /etc %[1]s/sock/.updater.sock.new; chmod 0777 %[1]s/sock
	done 2>/dev/null`, d.paths.Root))
	attack.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: agentUID, Gid: agentGroup}}
	require.NoError(t, attack.Start())
	t.Cleanup(func() { _ = attack.Process.Kill(); _ = attack.Wait() })
	for i := range 20 {
		require.NoError(t, os.RemoveAll(d.paths.SocketDir()))
		cmd := d.updaterCmd("")
		var logs strings.Builder
		cmd.Stdout, cmd.Stderr = &logs, &logs
		require.NoError(t, cmd.Start())
		require.Eventually(t, func() bool { _, err := os.Stat(d.paths.Socket()); return err == nil }, 20*time.Second, 10*time.Millisecond,
			"restart %d made no socket: %s", i, &logs)
		out, _ := as(t, agentUID, agentGroup, nil, "garbage\n", peerBin, d.paths.Socket())
		assert.Contains(t, out, "not an attempt", "restart %d serves", i)
		require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM))
		_ = cmd.Wait()
	}
}
