package fleetkv

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/solar-pipeline/solar/device/wire"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// attempt is a sealed attempt for device with the n-th binary.
func attempt(t *testing.T, device string, n int) (wire.Attempt, string) {
	t.Helper()
	digest := fmt.Sprintf("sha256:%064x", n)
	a, err := wire.Attempt{DeviceID: device, TargetVersion: fmt.Sprintf("1.%d.0", n),
		Artifact: wire.Artifact{URL: "https://registry.example.com/v2/fleet/agent/blobs/" + digest, Digest: digest, Size: 1000 + int64(n), Platform: "linux/arm64"}}.Seal()
	require.NoError(t, err)
	// The digest of the attempt's own artifact stands in for PackAttempt's.
	return a, fmt.Sprintf("sha256:%064x", 1<<20+n)
}

func bucket(t *testing.T, js jetstream.JetStream, replicas int) *Bucket {
	t.Helper()
	b, err := OpenBucket(context.Background(), js, "fleet", replicas, Create, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return b
}

func TestApply(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real nats-server")
	}
	ctx := context.Background()
	_, js := testenv.StartNATS(t).Connect(t)
	b := bucket(t, js, 1)
	a1, d1 := attempt(t, "dev-1", 1)
	a2, d2 := attempt(t, "dev-1", 2)

	for _, step := range []struct {
		a      wire.Attempt
		digest string
		dryRun bool
		want   string
	}{
		{a1, d1, true, publish.Create},
		{a1, d1, false, publish.Create},
		{a1, d1, false, publish.Unchanged}, // idempotent
		{a2, d2, true, publish.Update},
		{a2, d2, false, publish.Update},
		{a2, d2, false, publish.Unchanged},
	} {
		got, err := b.Apply(ctx, step.a, step.digest, step.dryRun)
		require.NoError(t, err)
		assert.Equal(t, step.want, got, "%s dry run %v", step.a.TargetVersion, step.dryRun)
	}
	st, err := b.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, a2, st[0].Current.Attempt, "the device's current attempt, whole")
	assert.Equal(t, d2, st[0].Current.Digest)

	t.Run("a UUID is bound to its content", func(t *testing.T) {
		a3, d3 := attempt(t, "dev-2", 3)
		_, err := js.KeyValue(ctx, "fleet")
		require.NoError(t, err)
		kv, _ := js.KeyValue(ctx, "fleet")
		_, err = kv.Create(ctx, "uuid."+a3.UUID, []byte("sha256:"+strings.Repeat("e", 64)))
		require.NoError(t, err)
		_, err = b.Apply(ctx, a3, d3, false)
		require.ErrorIs(t, err, ErrRebound)
		assert.Contains(t, err.Error(), "dev-2")
		_, err = kv.Get(ctx, "attempt.dev-2")
		assert.ErrorIs(t, err, jetstream.ErrKeyNotFound, "nothing written")
	})

	t.Run("rollback-failed blocks until repair", func(t *testing.T) {
		kv, err := js.KeyValue(ctx, "fleet")
		require.NoError(t, err)
		_, err = kv.Put(ctx, "state.dev-1", []byte(`{"state":"rollback-failed","step":"start"}`))
		require.NoError(t, err)
		a4, d4 := attempt(t, "dev-1", 4)
		for _, dryRun := range []bool{true, false} {
			_, err = b.Apply(ctx, a4, d4, dryRun)
			require.ErrorIs(t, err, wire.ErrBlocked)
			assert.Contains(t, err.Error(), "solar fleet repair dev-1")
		}
		require.ErrorContains(t, b.Repair(ctx, "dev-1", " "), "needs a reason")
		require.ErrorContains(t, b.Repair(ctx, "dev-2", "checked"), "not blocked")
		require.NoError(t, b.Repair(ctx, "dev-1", "reflashed the agent by hand"))
		st, _, err := b.State(ctx, "dev-1")
		require.NoError(t, err)
		assert.Equal(t, StateRepaired, st.State)
		assert.Equal(t, "reflashed the agent by hand", st.Reason)
		got, err := b.Apply(ctx, a4, d4, false)
		require.NoError(t, err)
		assert.Equal(t, publish.Update, got)
	})
}

// TestBadDeviceIDsSendNothing: a Bucket without a connection panics on any
// request, so these calls prove that a bad device id is refused before one.
func TestBadDeviceIDsSendNothing(t *testing.T) {
	ctx := context.Background()
	b := &Bucket{log: slog.New(slog.DiscardHandler)}
	good, digest := attempt(t, "dev-1", 1)
	for _, id := range []string{"", ".", "a.b", "..", "a..b", "*", "a*", ">", "a>", "a b", " a", "a\t", "a\n", "dév", "设备", strings.Repeat("a", 65), "a/b", "a\x00"} {
		a := good
		a.DeviceID = id
		_, err := b.Apply(ctx, a, digest, false)
		assert.ErrorContains(t, err, "invalid device id", "%q", id)
		_, err = a.Seal()
		assert.ErrorContains(t, err, "invalid device id", "%q", id)
		_, _, err = b.State(ctx, id)
		assert.ErrorContains(t, err, "invalid device id", "%q", id)
		assert.ErrorContains(t, b.Repair(ctx, id, "reason"), "invalid device id", "%q", id)
		_, err = b.Status(ctx, id)
		assert.ErrorContains(t, err, "invalid device id", "%q", id)
	}
	assert.NoError(t, wire.CheckDeviceID(strings.Repeat("a", 64)))
	assert.NoError(t, wire.CheckDeviceID("Dev_1-a"))
}

// TestConcurrentWriters: writers that all read a device's attempt at the same
// revision, then write at once: exactly one wins per device, the others get
// ErrChanged; on one server (10071) and on a replicated R3 bucket (10164).
func TestConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs real nats-servers")
	}
	for _, tc := range []struct {
		name     string
		start    func(testing.TB) *testenv.NATS
		replicas int
	}{
		{"one server", testenv.StartNATS, 1},
		{"three replicas", func(t testing.TB) *testenv.NATS { return testenv.StartNATSCluster(t, 3) }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, js := tc.start(t).Connect(t)
			b := bucket(t, js, tc.replicas)
			const writers, devices = 6, 3
			for d := range devices {
				device := fmt.Sprintf("dev-%d", d)
				if d > 0 { // dev-0 has none yet (Create races), the others one (Update races)
					a, digest := attempt(t, device, 100)
					_, err := b.Apply(ctx, a, digest, false)
					require.NoError(t, err)
				}
				var prepared []*Write
				for w := range writers {
					a, digest := attempt(t, device, w)
					p, err := b.Prepare(ctx, a, digest)
					require.NoError(t, err)
					prepared = append(prepared, p)
				}
				errs := make([]error, writers)
				var wg sync.WaitGroup
				for i, p := range prepared {
					wg.Go(func() { errs[i] = p.Commit(ctx) })
				}
				wg.Wait()
				winner := -1
				for i, err := range errs {
					if err == nil {
						assert.Equal(t, -1, winner, "%s: one winner", device)
						winner = i
						continue
					}
					assert.ErrorIs(t, err, ErrChanged, device)
					assert.Contains(t, err.Error(), "device "+device+": the device's attempt changed underneath you")
				}
				require.NotEqual(t, -1, winner, "%s: one writer wins", device)
				st, err := b.Status(ctx, device)
				require.NoError(t, err)
				assert.Equal(t, prepared[winner].Attempt.UUID, st[0].Current.UUID, "%s: the winner's attempt is current", device)
			}
		})
	}
}

// TestLeaderKill kills the stream leader of an R3 bucket between a write's
// read and its commit, and again before a whole apply: once a new leader is
// elected, writes at the right revision succeed, and a stale revision still
// loses.
func TestLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a 3-node NATS cluster")
	}
	ctx := context.Background()
	cluster := testenv.StartNATSCluster(t, 3)
	_, js := cluster.Connect(t)
	b := bucket(t, js, 3)
	killLeader := func() int {
		t.Helper()
		s, err := js.Stream(ctx, "KV_fleet")
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		require.NotNil(t, info.Cluster)
		i := cluster.NodeOf(info.Cluster.Leader)
		require.GreaterOrEqual(t, i, 0, "leader %s", info.Cluster.Leader)
		cluster.Kill(i)
		t.Logf("killed the stream leader %s", info.Cluster.Leader)
		return i
	}
	a1, d1 := attempt(t, "dev-1", 1)
	_, err := b.Apply(ctx, a1, d1, false)
	require.NoError(t, err)

	a2, d2 := attempt(t, "dev-1", 2)
	w, err := b.Prepare(ctx, a2, d2)
	require.NoError(t, err)
	a3, d3 := attempt(t, "dev-1", 3)
	stale, err := b.Prepare(ctx, a3, d3)
	require.NoError(t, err)
	first := killLeader()
	require.NoError(t, w.Commit(ctx), "the write at the revision it read succeeds after the election")
	require.ErrorIs(t, stale.Commit(ctx), ErrChanged, "a write at a stale revision still loses")

	second := killLeader() // two of three down: no quorum until one is back
	cluster.Restart(t, first)
	cluster.Restart(t, second)
	a4, d4 := attempt(t, "dev-1", 4)
	got, err := b.Apply(ctx, a4, d4, false)
	require.NoError(t, err)
	assert.Equal(t, publish.Update, got)
	e, err := js.KeyValue(ctx, "fleet")
	require.NoError(t, err)
	entry, err := e.Get(ctx, "attempt.dev-1")
	require.NoError(t, err)
	var cur wire.Current
	require.NoError(t, json.Unmarshal(entry.Value(), &cur))
	assert.Equal(t, a4.UUID, cur.UUID)
}

// TestRepairCompareAndSet: the device reports again between Repair's read of
// its state and Repair's write: Repair writes at the revision it read, so it
// fails and the device's report stands (a Put would overwrite it).
func TestRepairCompareAndSet(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real nats-server")
	}
	ctx := context.Background()
	_, js := testenv.StartNATS(t).Connect(t)
	b := bucket(t, js, 1)
	kv, err := js.KeyValue(ctx, "fleet")
	require.NoError(t, err)
	_, err = kv.Put(ctx, "state.dev-1", []byte(`{"state":"rollback-failed","step":"start"}`))
	require.NoError(t, err)
	const reported = `{"state":"rollback-failed","step":"probe","reason":"the previous agent does not start either"}`
	b.beforeRepairWrite = func([]byte) {
		_, err := kv.Put(ctx, "state.dev-1", []byte(reported))
		require.NoError(t, err)
	}
	err = b.Repair(ctx, "dev-1", "reflashed by hand")
	require.ErrorContains(t, err, "device dev-1: its state changed while repairing")
	e, err := kv.Get(ctx, "state.dev-1")
	require.NoError(t, err)
	assert.JSONEq(t, reported, string(e.Value()), "the device's report stands")

	b.beforeRepairWrite = nil
	require.NoError(t, b.Repair(ctx, "dev-1", "reflashed by hand"), "run again: it repairs")
	st, _, err := b.State(ctx, "dev-1")
	require.NoError(t, err)
	assert.Equal(t, StateRepaired, st.State)

	// A write whose reply was lost lands, and the retry at the old revision
	// finds Repair's own value: written.
	_, err = kv.Put(ctx, "state.dev-1", []byte(`{"state":"rollback-failed","step":"start"}`))
	require.NoError(t, err)
	b.beforeRepairWrite = func(value []byte) {
		_, err := kv.Put(ctx, "state.dev-1", value)
		require.NoError(t, err)
	}
	require.NoError(t, b.Repair(ctx, "dev-1", "reflashed again"))
	st, _, err = b.State(ctx, "dev-1")
	require.NoError(t, err)
	assert.Equal(t, "reflashed again", st.Reason)
}
