package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
)

// start runs the updater until the test ends and returns its pid once its
// socket is there.
func (d *device) start(t *testing.T) int {
	t.Helper()
	cmd := d.updaterCmd("")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	_ = os.Remove(d.paths.Socket())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("updater:\n%s", logs.String())
		}
	})
	require.Eventually(t, func() bool { _, err := os.Stat(d.paths.Socket()); return err == nil }, 20*time.Second, 20*time.Millisecond)
	return cmd.Process.Pid
}

// exchange sends raw bytes on the socket and returns the one reply.
func exchange(t *testing.T, socket string, raw string) wire.Outcome {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	require.NoError(t, err)
	defer conn.Close()
	// The updater may refuse and close before it reads (a peer outside the
	// group): the write may then fail; the reply is there to read.
	_, _ = conn.Write([]byte(raw))
	var o wire.Outcome
	require.NoError(t, json.NewDecoder(conn).Decode(&o))
	return o
}

// sockets lists the kinds of the sockets a process holds: unix, tcp, udp.
func sockets(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]string{}
	for _, kind := range []string{"unix", "tcp", "tcp6", "udp", "udp6"} {
		b, err := os.ReadFile("/proc/net/" + kind)
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			switch {
			case kind == "unix" && len(f) >= 7:
				inodes[f[6]] = kind
			case kind != "unix" && len(f) >= 10:
				inodes[f[9]] = kind
			}
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || !strings.HasPrefix(target, "socket:[") {
			continue
		}
		inode := strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")
		out = append(out, inodes[inode]+" "+inode)
	}
	return out
}

// TestSocket: a peer outside the agent's group is refused, and so is
// anything but an attempt; after an attempt the updater holds no socket but
// Unix ones (its download connection is closed).
func TestSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs updater and agent processes")
	}
	server := startArtifactServer(t)
	a := server.attempt(t, builds["v2"], "2.0.0", "blobs")
	line, err := json.Marshal(wire.Request{Attempt: &a})
	require.NoError(t, err)

	t.Run("a peer outside the group", func(t *testing.T) {
		d := newDevice(t, server, nil, "--group", "4242") // the later --group wins
		d.start(t)
		o := exchange(t, d.paths.Socket(), string(line)+"\n")
		assert.Equal(t, wire.StateRefused, o.State)
		assert.Contains(t, o.Reason, "is not in group 4242")
		assert.Equal(t, "v1", selected(t, d.paths, builds), "nothing happened")
	})

	t.Run("anything but an attempt", func(t *testing.T) {
		d := newDevice(t, server, nil)
		pid := d.start(t)
		for _, raw := range []string{`{"command":"reboot"}`, `{"attempt":{"uuid":"x"},"exec":"/bin/sh"}`, "rm -rf /", `{}`, strings.Repeat("x", 100000)} {
			o := exchange(t, d.paths.Socket(), raw+"\n")
			assert.Equal(t, wire.StateRefused, o.State, "%.40s", raw)
		}
		o := exchange(t, d.paths.Socket(), `{"attempt":{"uuid":"00000000-0000-0000-0000-000000000000","deviceId":"a.b"}}`+"\n")
		assert.Equal(t, wire.StateRefused, o.State, "an attempt that does not verify")
		assert.Equal(t, "v1", selected(t, d.paths, builds))

		final, err := wire.Send(context.Background(), d.paths.Socket(), a, nil)
		require.NoError(t, err)
		assert.Equal(t, wire.PhaseCommitted, final.State, final.Reason)
		for _, s := range sockets(t, pid) {
			assert.True(t, strings.HasPrefix(s, "unix "), "the updater holds %s: no network connection after the download", s)
		}
	})
}

// natsDevice is a device whose agent forwards dev-1's attempts from the
// bucket solar-fleet of a real NATS server (the updater starts each agent
// with the same arguments), its updater running with extra flags besides;
// and the bucket, as solar fleet and as a raw key-value store.
func natsDevice(t *testing.T, server *artifactServer, extra ...string) (*device, *fleetkv.Bucket, jetstream.KeyValue) {
	t.Helper()
	nats := testenv.StartNATS(t)
	_, js := nats.Connect(t)
	ctx := context.Background()
	bucket, err := fleetkv.OpenBucket(ctx, js, "solar-fleet", 1, fleetkv.Create, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, "solar-fleet")
	require.NoError(t, err)
	d := newDevice(t, server, []string{"--nats", nats.URL, "--device", "dev-1"}, append([]string{"--ready-timeout", "5s"}, extra...)...)
	t.Cleanup(func() {
		if b, _ := os.ReadFile(d.paths.Log()); t.Failed() {
			t.Logf("agents:\n%s", b)
		}
	})
	d.start(t)
	return d, bucket, kv
}

// applyBuild is solar fleet apply of an attempt of build as version for
// dev-1, its URL under path ("blobs" when none).
func applyBuild(t *testing.T, bucket *fleetkv.Bucket, server *artifactServer, build, version string, path ...string) wire.Attempt {
	t.Helper()
	ctx := context.Background()
	a := server.attempt(t, builds[build], version, append(path, "blobs")[0])
	p, err := fleet.PackAttempt(a)
	require.NoError(t, err)
	_, err = bucket.Apply(ctx, a, p.Root.Digest.String(), false)
	require.NoError(t, err)
	return a
}

// reported waits until dev-1 reports the state want into the bucket.
func reported(t *testing.T, bucket *fleetkv.Bucket, want string) *wire.DeviceState {
	t.Helper()
	var st *wire.DeviceState
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		s, err := bucket.Status(context.Background(), "dev-1")
		if err == nil && len(s) == 1 && s[0].State != nil {
			st = s[0].State
		}
		if st != nil && st.State == want {
			return st
		}
	}
	require.Failf(t, "not reported", "dev-1 reports %s (last: %+v)", want, st)
	return nil
}

// TestThroughNATS: the whole path on a device. solar's side writes attempts
// into a real NATS bucket; the running agent (agentlink) forwards them to the
// updater; the updater switches; the outcomes the agent publishes are what
// the bucket's status shows: committed, then rolled-back at readiness.
func TestThroughNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs NATS, updater and agent processes")
	}
	server := startArtifactServer(t)
	d, bucket, _ := natsDevice(t, server)

	applyBuild(t, bucket, server, "v2", "2.0.0")
	st := reported(t, bucket, wire.PhaseCommitted)
	assert.Equal(t, "2.0.0", st.Version)
	assert.Equal(t, "v2", running(t, d.paths, builds), "the new agent runs, and it forwards the next attempts")

	applyBuild(t, bucket, server, "v2-never-ready", "3.0.0")
	st = reported(t, bucket, wire.PhaseRolledBack)
	assert.Equal(t, "readiness", st.Step)
	assert.Equal(t, "v2", running(t, d.paths, builds), "back to the previous agent")

	// An attempt whose download is retried without end (a 404, no
	// notAfter) gives way to the next one the operator applies.
	applyBuild(t, bucket, server, "v2-wrong-version", "4.0.0", "missing")
	reported(t, bucket, wire.StateDownloadRetrying)
	applyBuild(t, bucket, server, "v1", "1.0.0")
	st = reported(t, bucket, wire.PhaseCommitted)
	assert.Equal(t, "1.0.0", st.Version)
	assert.Equal(t, "v1", running(t, d.paths, builds))
}

// TestForgedAttemptNotForwarded: whoever can write attempt.<id> can compute
// a valid UUID; the agent forwards only what solar fleet apply bound
// (uuid.<uuid> naming the digest of the attempt's content).
func TestForgedAttemptNotForwarded(t *testing.T) {
	server := startArtifactServer(t)
	d, bucket, kv := natsDevice(t, server)
	ctx := context.Background()

	forge := func(build, version, boundTo string) {
		t.Helper()
		a := server.attempt(t, builds[build], version, "blobs")
		digest, err := wire.AttemptDigest(a)
		require.NoError(t, err)
		if boundTo != "" {
			_, err := kv.Create(ctx, "uuid."+a.UUID, []byte(boundTo))
			require.NoError(t, err)
		}
		v, err := json.Marshal(wire.Current{UUID: a.UUID, Digest: digest, Attempt: a})
		require.NoError(t, err)
		_, err = kv.Put(ctx, "attempt.dev-1", v)
		require.NoError(t, err)
	}
	refused := func(why string) {
		t.Helper()
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(d.paths.Log())
			return strings.Contains(string(b), why)
		}, 20*time.Second, 100*time.Millisecond, "the agent refuses: %s", why)
		s, err := bucket.Status(ctx, "dev-1")
		require.NoError(t, err)
		st := s[0].State // the agent's startup publication (running) at most
		assert.True(t, st == nil || st.State == "", "nothing was forwarded, nothing reported: %+v", st)
	}
	forge("v2", "2.0.0", "")
	refused("no binding uuid.")
	forge("v2", "2.0.1", "sha256:"+strings.Repeat("0", 64))
	refused("binds another digest")
	assert.Equal(t, "v1", running(t, d.paths, builds))

	applyBuild(t, bucket, server, "v2", "2.0.0")
	reported(t, bucket, wire.PhaseCommitted) // an attempt fleet apply wrote is forwarded and commits
}
