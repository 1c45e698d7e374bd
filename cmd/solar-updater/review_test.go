package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
)

// Attacks a security review found: whoever may send attempts (the socket's
// group) names any URL, digest and size.

// TestAttemptNeverDeletesInstalled: an attempt naming the running binary's
// digest with another size changes nothing: the binary stays, selected and
// running, and its digest is not failed.
func TestAttemptNeverDeletesInstalled(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	v1 := builds["v1"]
	a, err := wire.Attempt{DeviceID: "dev-1", TargetVersion: "1.0.0", Artifact: wire.Artifact{
		URL: server.URL + "/missing/x", Digest: digestOf(v1), Size: int64(len(v1)) + 1, Platform: "linux/amd64"}}.Seal()
	require.NoError(t, err)
	o, ok := d.run(t, "", a)
	require.True(t, ok)
	assert.Equal(t, wire.PhaseRolledBack, o.State)
	assert.Equal(t, "attempt", o.Step, o.Reason)
	_, err = os.Stat(d.paths.Binary(digestOf(v1)))
	assert.NoError(t, err, "the installed binary is there")
	assert.Equal(t, "v1", selected(t, d.paths, builds))
	assert.Equal(t, "v1", running(t, d.paths, builds))
	journal, err := os.ReadFile(d.paths.Journal())
	require.NoError(t, err)
	assert.NotContains(t, string(journal), `"failed"`, "no digest failed")
}

// TestDownloadIsRootsAlone: while a download is under way, nobody but root
// can read it: the agent names URLs, and must not read what it cannot.
func TestDownloadIsRootsAlone(t *testing.T) {
	server := startArtifactServer(t)
	b := builds["v2"]
	release := make(chan struct{})
	half := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		_, _ = w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); half.Close() })
	d := newDevice(t, server, nil, "--download-idle-timeout", "60s")
	d.start(t)
	a, err := wire.Attempt{DeviceID: "dev-1", TargetVersion: "2.0.0", Artifact: wire.Artifact{
		URL: half.URL + "/b", Digest: digestOf(b), Size: int64(len(b)), Platform: "linux/amd64"}}.Seal()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = wire.Send(ctx, d.paths.Socket(), a, nil) }()
	staging := d.paths.Staging(digestOf(b))
	require.Eventually(t, func() bool {
		fi, err := os.Stat(filepath.Join(staging, "agent"))
		return err == nil && fi.Size() > 0
	}, 20*time.Second, 20*time.Millisecond, "the download began")
	for path, want := range map[string]os.FileMode{staging: 0o700, filepath.Join(staging, "agent"): 0o600} {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, fi.Mode().Perm(), path)
	}
}

// TestNamespacedFakeIsNoAgent: a user who mounts its own folder over
// versions/ in a namespace of its own and runs a file there named like an
// installed binary is no agent: the updater starts the real one all the
// same.
func TestNamespacedFakeIsNoAgent(t *testing.T) {
	server := startArtifactServer(t)
	d := newDeviceWith(t, server, deviceOptions{unprivileged: true})
	require.NoError(t, d.service.Stop(context.Background()))
	fake := filepath.Join(d.paths.Version(digestOf(builds["v1"])), "agent")
	script := fmt.Sprintf("mount -t tmpfs none %s && mkdir -p %s && cp /bin/sleep %s && exec %s 300",
		d.paths.Versions(), filepath.Dir(fake), fake, fake)
	cmd := exec.Command("unshare", "-Urm", "sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: agentUID, Gid: agentGroup}}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid))
		return exe == fake
	}, 10*time.Second, 20*time.Millisecond, "the fake runs (unshare: %s)", &out)
	d.start(t)
	require.Eventually(t, func() bool {
		for _, pid := range agentProcesses(d.paths) {
			if pid != cmd.Process.Pid && sameMountNamespace(pid) {
				return true
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "the updater started the real agent")
}

func sameMountNamespace(pid int) bool {
	self, _ := os.Readlink("/proc/self/ns/mnt")
	theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	return self != "" && self == theirs
}
