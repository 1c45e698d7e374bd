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

// TestStatusBadEntries: a value that is not JSON of its kind, or a key whose
// id is no valid device id (written by hand), makes that device's row Bad
// with the reason; the listing and the other devices' rows are as usual.
func TestStatusBadEntries(t *testing.T) {
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
	before := time.Now().Add(-time.Second)
	for _, id := range []string{"dev-1", "dev-2"} {
		a, digest := attempt(t, id, 1)
		_, err := b.Apply(ctx, a, digest, false)
		require.NoError(t, err)
	}
	put("state.dev-1", `{"state":"committed","version":"1.1.0","at":"2026-01-02T03:04:05Z"}`)
	put("state.dev-2", `{"state":`)
	put("attempt.dev-3", `not json`)
	put("state.dev-3", `{"state":"switching"}`)
	put("attempt.a.b", `{}`)
	put("state.a.b", `{"state":"committed"}`)
	// nats.go refuses such a key; a raw publish to the bucket's subject does not.
	_, err = js.Publish(ctx, "$KV.fleet.state.\x1b[2J", []byte(`{"state":"committed"}`))
	require.NoError(t, err)
	after := time.Now().Add(time.Second)

	st, err := b.Status(ctx)
	require.NoError(t, err, "one bad device is one bad row")
	var ids []string
	for _, s := range st {
		ids = append(ids, s.DeviceID)
		assert.True(t, s.Known(), s.DeviceID)
	}
	require.Equal(t, []string{"\x1b[2J", "a.b", "dev-1", "dev-2", "dev-3"}, ids)

	esc, ab, dev1, dev2, dev3 := st[0], st[1], st[2], st[3], st[4]
	assert.Contains(t, esc.StateError, `key "state.\x1b[2J": invalid device id "\x1b[2J"`)
	assert.Empty(t, esc.AttemptError)
	assert.Contains(t, ab.AttemptError, `key "attempt.a.b": invalid device id "a.b"`)
	assert.Contains(t, ab.StateError, `key "state.a.b": invalid device id "a.b"`)
	assert.Nil(t, ab.State, "a key that is no device's is not read")

	assert.False(t, dev1.Bad())
	assert.Equal(t, "committed", dev1.State.State)
	assert.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), dev1.StateTime, "the state's at")
	assert.WithinRange(t, dev1.AttemptTime, before, after, "the attempt entry's time")

	assert.True(t, dev2.Bad())
	assert.Empty(t, dev2.AttemptError)
	assert.Contains(t, dev2.StateError, "state.dev-2: not a device state: unexpected end of JSON input")
	require.NotNil(t, dev2.Current, "the readable half is read")
	assert.WithinRange(t, dev2.StateTime, before, after, "a bad state still has its entry's time")

	assert.Contains(t, dev3.AttemptError, "attempt.dev-3: not an attempt: invalid character")
	assert.Empty(t, dev3.StateError)
	assert.Equal(t, "switching", dev3.State.State)
	assert.WithinRange(t, dev3.StateTime, before, after, "no at: the entry's time")

	named, err := b.Status(ctx, "dev-3", "dev-2", "dev-9")
	require.NoError(t, err, "named devices alike")
	require.Len(t, named, 3)
	assert.Equal(t, dev3, named[0])
	assert.Equal(t, dev2, named[1])
	assert.False(t, named[2].Known())

	states, err := b.States(ctx, "dev-3", "dev-2", "dev-9", "dev-1")
	require.NoError(t, err, "States: a bad state is a bad row too")
	require.Len(t, states, 4)
	for i, want := range []fleet.Status{dev3, dev2, named[2], dev1} {
		assert.Equal(t, want.DeviceID, states[i].DeviceID)
		assert.Equal(t, want.State, states[i].State, want.DeviceID)
		assert.Equal(t, want.StateError, states[i].StateError, want.DeviceID)
		assert.Equal(t, want.StateTime, states[i].StateTime, want.DeviceID)
		assert.Nil(t, states[i].Current, "States reads no attempt")
	}
	_, err = b.States(ctx, "a.b")
	assert.ErrorContains(t, err, "invalid device id", "States: an invalid named id fails the call")
}
