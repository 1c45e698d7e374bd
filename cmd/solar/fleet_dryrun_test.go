package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// bucketState is everything a write to a key-value bucket changes: every
// key with its revision and value, and the sequence of the bucket's stream
// (which a write of the same value, a delete or a purge moves too).
type bucketState struct {
	Keys     map[string]string
	LastSeq  uint64
	Messages uint64
}

func readBucket(t *testing.T, js jetstream.JetStream, name string) bucketState {
	t.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, name)
	require.NoError(t, err)
	keys, err := kv.ListKeys(ctx)
	require.NoError(t, err)
	s := bucketState{Keys: map[string]string{}}
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		require.NoError(t, err, k)
		s.Keys[k] = fmt.Sprintf("revision %d: %s", e.Revision(), e.Value())
	}
	info, err := js.Stream(ctx, "KV_"+name)
	require.NoError(t, err)
	s.LastSeq, s.Messages = info.CachedInfo().State.LastSeq, info.CachedInfo().State.Msgs
	return s
}

// TestFleetApplyDryRunWritesNothing: apply --dry-run reads the registry and
// the bucket and writes to neither: every key of the bucket keeps its
// revision and value and the bucket's sequence stays, whether the attempts
// would be unchanged or updated (whose new UUIDs stay unbound); a bucket that
// does not exist is not created. --exit-code says what would change.
func TestFleetApplyDryRunWritesNothing(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	ns := testenv.StartNATS(t)
	_, js := ns.Connect(t)
	ctx := context.Background()
	login := []string{"--registry", proxy.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	for _, v := range []string{"1.4.0", "1.5.0"} {
		code, _, stderr := fleetCLI(t, reg, append(append([]string{"fleet", "push-agent", "--repository", "fleet/agent", "--version", v}, login...), agentFiles(t, v)...)...)
		require.Equal(t, 0, code, stderr)
	}
	tree := filepath.Join(t.TempDir(), "tree")
	apply := func(extra ...string) (int, applied) {
		t.Helper()
		args := append(append([]string{"fleet", "apply", "-o", "json", "--cache-dir", "", "--nats", ns.URL, tree}, login...), extra...)
		code, stdout, stderr := fleetCLI(t, reg, args...)
		var a applied
		require.NoError(t, json.Unmarshal([]byte(stdout), &a), "%s\n%s", stdout, stderr)
		require.Len(t, a.Devices, 2, stdout)
		return code, a
	}
	fleetTree(t, tree, "1.4.0")
	code, first := apply()
	require.Equal(t, 0, code)
	kv, err := js.KeyValue(ctx, "solar-fleet")
	require.NoError(t, err)
	_, err = kv.Put(ctx, "state.dev-1", []byte(`{"state":"committed","version":"1.4.0"}`))
	require.NoError(t, err)
	before := readBucket(t, js, "solar-fleet")
	require.Len(t, before.Keys, 5, "two attempts, two UUIDs, a state: %v", before.Keys)

	for _, c := range []struct {
		version, action string
		exit            int
	}{
		{"1.4.0", "unchanged", 0},
		{"1.5.0", "update", 2},
	} {
		fleetTree(t, tree, c.version)
		proxy.Take()
		code, a := apply("--dry-run", "--exit-code")
		assert.Equal(t, c.exit, code, c.version)
		for i, r := range a.Devices {
			assert.Equal(t, c.action, r.Action, "%s %s: %s", c.version, r.DeviceID, r.Error)
			assert.Equal(t, c.action == "unchanged", r.UUID == first.Devices[i].UUID, "%s %s: a new attempt, a new UUID", c.version, r.DeviceID)
			_, err := kv.Get(ctx, "uuid."+r.UUID)
			if c.action != "unchanged" {
				require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "%s %s: the dry run bound the attempt's UUID", c.version, r.DeviceID)
			}
		}
		require.Equal(t, before, readBucket(t, js, "solar-fleet"), "%s: the dry run wrote into the bucket", c.version)
		assert.Zero(t, countproxy.Writes(proxy.Take()), "%s: the dry run wrote to the registry", c.version)
	}

	// A bucket that does not exist reads as empty: everything would be
	// created, and nothing is.
	proxy.Take()
	code, a := apply("--dry-run", "--exit-code", "--bucket", "fresh")
	assert.Equal(t, 2, code)
	for _, r := range a.Devices {
		assert.Equal(t, "create", r.Action, "%s: %s", r.DeviceID, r.Error)
	}
	_, err = js.KeyValue(ctx, "fresh")
	assert.ErrorIs(t, err, jetstream.ErrBucketNotFound, "the dry run created the bucket")
	assert.Zero(t, countproxy.Writes(proxy.Take()), "the dry run wrote to the registry")
	require.Equal(t, before, readBucket(t, js, "solar-fleet"))
}
