package agentlink

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
)

// thisDigest stands for the digest of the binary under test.
var thisDigest = "sha256:" + strings.Repeat("a", 64)

// attemptOf is an attempt for device of the binary with digest as version.
func attemptOf(device, digest, version string) wire.Attempt {
	return wire.Attempt{DeviceID: device, TargetVersion: version, Artifact: wire.Artifact{
		URL: "https://registry.example.com/v2/fleet/agent/blobs/" + digest, Digest: digest, Size: 1, Platform: "linux/amd64"}}
}

// fakeUpdater listens where the updater's socket is and records the UUIDs of
// the attempts sent to it. It answers none, as the updater holds the
// attempt that started a candidate until its transaction ends.
type fakeUpdater struct{ got chan string }

func startFakeUpdater(t *testing.T, path string) *fakeUpdater {
	t.Helper()
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	u := &fakeUpdater{got: make(chan string, 16)}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() })
			var req wire.Request
			line, _ := bufio.NewReader(conn).ReadBytes('\n')
			if json.Unmarshal(line, &req) == nil && req.Attempt != nil {
				u.got <- req.Attempt.UUID
			}
		}
	}()
	return u
}

// linkRun is a Link running until the test ends; readies counts its
// reports.
type linkRun struct {
	logs    *testenv.LockedBuffer
	readies atomic.Int32
}

// runLink runs l, its Ready counting and then calling onReady (if any).
func runLink(t *testing.T, l *Link, onReady func()) *linkRun {
	t.Helper()
	r := &linkRun{logs: new(testenv.LockedBuffer)}
	l.Log = slog.New(slog.NewTextHandler(r.logs, nil))
	l.Retry = 20 * time.Millisecond
	l.Ready = func(context.Context) error {
		if onReady != nil {
			onReady()
		}
		r.readies.Add(1)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		if t.Failed() {
			t.Logf("the link's log:\n%s", r.logs.String())
		}
	})
	return r
}

// withholds waits until the link says it is not ready because of why, and
// checks that it did not report ready.
func (r *linkRun) withholds(t *testing.T, why string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(r.logs.String(), why) }, 10*time.Second, 10*time.Millisecond,
		"the link says: %s", why)
	time.Sleep(100 * time.Millisecond) // a few rounds more
	require.Zero(t, r.readies.Load(), "not ready while: %s", why)
}

// refusingBucket refuses writes while refuse is set, as the auth callout
// refuses a key that is not the device's.
type refusingBucket struct {
	Store
	refuse *atomic.Bool
}

var errRefused = errors.New("nats: permissions violation (test)")

func (r refusingBucket) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if r.refuse.Load() {
		return 0, errRefused
	}
	return r.Store.Create(ctx, key, value, opts...)
}

func (r refusingBucket) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if r.refuse.Load() {
		return 0, errRefused
	}
	return r.Store.Update(ctx, key, value, rev)
}

// TestReadyWaitsForEveryCondition withholds the conditions one after the
// other, in their order, and lets each hold in turn: the link reports ready
// only once all hold, and once. When it does, the updater has the current
// attempt again and state.dev-1 carries its version.
func TestReadyWaitsForEveryCondition(t *testing.T) {
	s := newTokenServer(t) // not started: NATS is down
	dir := t.TempDir()
	var depsDown, recoverFails, refuse atomic.Bool
	depsDown.Store(true)
	recoverFails.Store(true)
	refuse.Store(true)
	nc, err := Connect(ConnectOptions{Servers: s.url(), DeviceID: "dev-1", ReconnectWait: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(nc.Close) // after the link's end
	socket := filepath.Join(dir, "updater.sock")
	var fake *fakeUpdater
	var forwardedFirst, runningFirst bool
	var kv jetstream.KeyValue
	l := &Link{Conn: nc, Store: refusingBucket{DeviceBucket(nc, "solar-fleet"), &refuse}, Bucket: "solar-fleet", DeviceID: "dev-1", Socket: socket,
		Version: "2.0.0", Digest: thisDigest,
		Dependencies: func(context.Context) error {
			if depsDown.Load() {
				return errors.New("the workload runtime does not answer")
			}
			return nil
		},
		Recover: func(context.Context) error {
			if recoverFails.Load() {
				return errors.New("an interrupted mutation")
			}
			return nil
		}}
	r := runLink(t, l, func() {
		forwardedFirst = len(fake.got) == 1
		e, err := kv.Get(context.Background(), "state.dev-1")
		runningFirst = err == nil && strings.Contains(string(e.Value()), `"running":"2.0.0"`)
	})
	r.withholds(t, "local dependencies: the workload runtime does not answer")
	depsDown.Store(false)
	r.withholds(t, "NATS: the connection is")
	s.start(t, "")
	r.withholds(t, "desired state: the snapshot of attempt.dev-1 is not complete") // no bucket yet
	kv = s.admin(t, "")
	a := putAttempt(t, kv, attemptOf("dev-1", thisDigest, "2.0.0"), true)
	r.withholds(t, "recovery: an interrupted mutation")
	recoverFails.Store(false)
	r.withholds(t, "recovery: attempt "+a.UUID+" is not forwarded to the updater yet") // no updater listens
	fake = startFakeUpdater(t, socket)
	r.withholds(t, "startup publication: nats: permissions violation (test)")
	assert.Equal(t, a.UUID, <-fake.got, "the attempt was forwarded again")
	fake.got <- a.UUID // seen at Ready again
	refuse.Store(false)
	require.Eventually(t, func() bool { return r.readies.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.True(t, forwardedFirst, "forwarded before ready")
	assert.True(t, runningFirst, "state.dev-1 carries the running version before ready")
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, int32(1), r.readies.Load(), "ready is reported once")
}

// TestTargetVersion: an attempt that activates this binary (its artifact's
// digest is this binary's) with another target version withholds readiness
// for good; any other snapshot does not.
func TestTargetVersion(t *testing.T) {
	s := newTokenServer(t)
	s.start(t, "")
	kv := s.admin(t, "")
	other := "sha256:" + strings.Repeat("b", 64)
	for _, tc := range []struct {
		name, device, digest, target string
		bound, ready                 bool
	}{
		{"activates this binary as another version", "dev-1", thisDigest, "2.0.1", true, false},
		{"activates this binary as its version", "dev-2", thisDigest, "2.0.0", true, true},
		{"activates another binary", "dev-3", other, "3.0.0", true, true},
		{"not bound: not the device's attempt", "dev-4", thisDigest, "2.0.1", false, true},
		{"no attempt", "dev-5", "", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.digest != "" {
				putAttempt(t, kv, attemptOf(tc.device, tc.digest, tc.target), tc.bound)
			}
			socket := filepath.Join(t.TempDir(), "updater.sock")
			startFakeUpdater(t, socket)
			nc, err := Connect(ConnectOptions{Servers: s.url(), DeviceID: tc.device})
			require.NoError(t, err)
			t.Cleanup(nc.Close) // after the link's end
			r := runLink(t, &Link{Conn: nc, Bucket: "solar-fleet", DeviceID: tc.device, Socket: socket,
				Version: "2.0.0", Digest: thisDigest}, nil)
			if !tc.ready {
				r.withholds(t, `as version \"2.0.1\", this binary is \"2.0.0\"`)
				time.Sleep(500 * time.Millisecond)
				assert.Zero(t, r.readies.Load(), "never ready")
				return
			}
			require.Eventually(t, func() bool { return r.readies.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
		})
	}
}
