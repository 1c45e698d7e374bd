package fleetkv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

// TestWatchStatus: the watch lists the devices as Status does, bad rows
// included, and then returns a device each time its attempt or state is
// written or deleted; other keys (uuid.*) and other devices than those named
// are not returned.
func TestWatchStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real nats-server")
	}
	ctx := context.Background()
	_, js := testenv.StartNATS(t).Connect(t)
	b := bucket(t, js, 1)
	kv, err := js.KeyValue(ctx, "fleet")
	require.NoError(t, err)
	put := func(key, value string) {
		t.Helper()
		_, err := kv.Put(ctx, key, []byte(value))
		require.NoError(t, err)
	}
	a, digest := attempt(t, "dev-1", 1)
	_, err = b.Apply(ctx, a, digest, false)
	require.NoError(t, err)
	put("state.dev-1", `{"state":"preparing","version":"1.1.0"}`)
	put("state.dev-2", `{"state":`)
	put("state.a.b", `{"state":"committed"}`)
	put("state.dev-3", `{"state":"committed"}`)
	require.NoError(t, kv.Delete(ctx, "state.dev-3"), "a deleted device is not listed")

	for _, named := range [][]string{nil, {"dev-2", "dev-1", "dev-3"}} {
		want, err := b.Status(ctx, named...)
		require.NoError(t, err)
		w, got, err := b.WatchStatus(ctx, WatchOptions{}, named...)
		require.NoError(t, err, named)
		w.Stop()
		assert.Equal(t, want, got, "%v: the listing is Status's", named)
	}

	wctx, cancel := context.WithCancel(ctx)
	w, _, err := b.WatchStatus(wctx, WatchOptions{}, "dev-1", "dev-2")
	require.NoError(t, err)
	next := func() fleet.Status {
		t.Helper()
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		s, err := w.Next(nctx)
		require.NoError(t, err)
		return s
	}
	put("uuid.0b8e2c3a", "sha256:00")
	put("state.dev-9", `{"state":"committed"}`)
	put("state.dev-1", `{"state":"committed","version":"1.1.0"}`)
	s := next()
	assert.Equal(t, "dev-1", s.DeviceID, "neither uuid.* nor a device not named")
	require.NotNil(t, s.State)
	assert.Equal(t, "committed", s.State.State)
	require.NotNil(t, s.Current, "the attempt is kept")
	assert.Equal(t, "1.1.0", s.Current.Attempt.TargetVersion)

	put("state.dev-2", `{"state":"refused","reason":"no"}`)
	s = next()
	assert.Equal(t, "dev-2", s.DeviceID)
	assert.False(t, s.Bad(), "the bad state was replaced")
	require.NoError(t, kv.Delete(ctx, "attempt.dev-1"))
	s = next()
	assert.Equal(t, "dev-1", s.DeviceID)
	assert.Nil(t, s.Current, "deleted")
	assert.Zero(t, s.AttemptTime)
	assert.Equal(t, "committed", s.State.State)

	cancel()
	_, err = w.Next(ctx)
	assert.ErrorIs(t, err, context.Canceled, "the watch's context ended it")
	_, err = w.Next(ctx)
	assert.ErrorIs(t, err, context.Canceled, "and it stays ended, at once")
	w.Stop()
}

// TestWatchStatusConnectionLost: a server that is back within the outage
// bound is watched again, the change made meanwhile included; one that is
// not fails Next with the reason, once the bound has passed.
func TestWatchStatusConnectionLost(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real nats-server")
	}
	ctx := context.Background()
	ns := testenv.StartNATS(t)
	_, js := ns.Connect(t)
	b := bucket(t, js, 1)
	w, _, err := b.WatchStatus(ctx, WatchOptions{Outage: 30 * time.Second})
	require.NoError(t, err)
	defer w.Stop()

	ns.Kill(0)
	ns.Restart(t, 0)
	_, js2 := ns.Connect(t)
	kv, err := js2.KeyValue(ctx, "fleet")
	require.NoError(t, err)
	_, err = kv.Put(ctx, "state.dev-1", []byte(`{"state":"committed"}`))
	require.NoError(t, err)
	nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := w.Next(nctx)
	require.NoError(t, err, "watched again after the restart")
	assert.Equal(t, "dev-1", s.DeviceID)

	w.outage = 500 * time.Millisecond
	ns.Kill(0)
	start := time.Now()
	_, err = w.Next(nctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lost the connection to NATS: not back within 500ms")
	assert.Less(t, time.Since(start), 10*time.Second)
}

// TestWatchStatusBucketDeleted: a watch whose bucket is deleted ends, and
// says so.
func TestWatchStatusBucketDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real nats-server")
	}
	ctx := context.Background()
	_, js := testenv.StartNATS(t).Connect(t)
	b := bucket(t, js, 1)
	w, _, err := b.WatchStatus(ctx, WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()
	require.NoError(t, js.DeleteKeyValue(ctx, "fleet"))
	nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = w.Next(nctx) // once the consumer's heartbeats are missed (10 s)
	require.ErrorIs(t, err, ErrWatchEnded)
	assert.Contains(t, err.Error(), "the bucket fleet was deleted")
}
