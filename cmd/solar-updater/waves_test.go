package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/callout"
	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/store"
)

// stagedFleet is a fleet of devices, each a root updater and the reference
// agent as processes, logged in to a real nats-server through the auth
// callout with its own provider token; the agent builds pushed to a real
// registry (TLS, login); and the operator's side: the objects' folder,
// solar fleet apply as a library call, the bucket.
type stagedFleet struct {
	t       *testing.T
	ids     []string
	tree    string
	reg     *testenv.Registry
	nats    fleetkv.NATS
	kv      jetstream.KeyValue
	bucket  *fleetkv.Bucket
	storeOf func() *pipeline.Store
}

// newStagedFleet starts n devices dev-01… (the first three labelled ring:
// canary, the others ring: field) running v1, and pushes the agent builds
// named as fleet/agent:VERSION.
func newStagedFleet(t *testing.T, n int, push map[string]string) *stagedFleet {
	t.Helper()
	op := testenv.StartOIDC(t)
	keys := t.TempDir()
	issuer, xkey, err := callout.NewKeys(keys)
	require.NoError(t, err)
	srv := testenv.StartNATSWith(t, testenv.NATSOptions{CalloutIssuer: issuer, CalloutXKey: xkey})
	serveCallout(t, srv, op, keys)
	_, js := srv.Connect(t) // the operator: a service user
	ctx := context.Background()
	f := &stagedFleet{t: t, tree: t.TempDir(), reg: testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true}),
		nats: fleetkv.NATS{Servers: srv.URL, User: srv.User, Password: srv.Password, Bucket: "solar-fleet"}}
	f.bucket, err = fleetkv.OpenBucket(ctx, js, "solar-fleet", 1, fleetkv.Create, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	f.kv, err = js.KeyValue(ctx, "solar-fleet")
	require.NoError(t, err)
	f.storeOf = func() *pipeline.Store {
		s, err := pipeline.OpenStore(ctx, pipeline.StoreOptions{Registry: &store.RemoteOptions{
			Host: f.reg.Host, Prefix: "solar", Username: f.reg.Username, Password: f.reg.Password, CAFile: f.reg.CAFile}})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	for version, build := range push {
		file := filepath.Join(t.TempDir(), "solar-fleet-agent")
		require.NoError(t, os.WriteFile(file, builds[build], 0o755))
		_, err := pipeline.PushAgent(ctx, pipeline.StoreOptions{Over: f.storeOf()}, pipeline.AgentOptions{
			Repository: "fleet/agent", Version: version, Files: []string{file + "=linux/" + runtime.GOARCH}})
		require.NoError(t, err)
	}
	creds := credentialsFile(t, map[string][2]string{f.reg.Host: {f.reg.Username, f.reg.Password}})
	for i := range n {
		id := fmt.Sprintf("dev-%02d", i+1)
		f.ids = append(f.ids, id)
		token := filepath.Join(t.TempDir(), "token")
		require.NoError(t, os.WriteFile(token, []byte(op.Token(t, op.AddDevice(t, id))), 0o600))
		d := newDevice(t, &artifactServer{caFile: f.reg.CAFile}, []string{"--nats", srv.URL, "--device", id, "--token-file", token},
			"--ready-timeout", "15s", "--credentials", creds)
		t.Cleanup(func() {
			if b, _ := os.ReadFile(d.paths.Log()); t.Failed() {
				t.Logf("%s's agents:\n%s", id, b)
			}
		})
		d.start(t)
	}
	return f
}

// declare writes the Devices and a DeviceUpgrade of all of them to version
// in three waves: the canary ring, half of the rest, the rest.
func (f *stagedFleet) declare(version string) {
	var b strings.Builder
	for i, id := range f.ids {
		ring := "field"
		if i < 3 {
			ring = "canary"
		}
		fmt.Fprintf(&b, "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Device\nmetadata: {name: %s, namespace: fleet, labels: {ring: %s}}\n"+
			"spec: {deviceId: %s, platform: linux/%s}\n---\n", id, ring, id, runtime.GOARCH)
	}
	fmt.Fprintf(&b, `apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: agents, namespace: fleet}
spec:
  agentVersion: %[1]s
  artifact: fleet/agent:%[1]s
  deviceSelector: {matchExpressions: [{key: ring, operator: Exists}]}
  rollout:
    waves:
      - {name: canary, selector: {matchLabels: {ring: canary}}, progressDeadline: 2m}
      - {name: half, percent: 50, progressDeadline: 2m}
      - {name: rest, progressDeadline: 2m}
`, version)
	require.NoError(f.t, os.WriteFile(filepath.Join(f.tree, "fleet.yaml"), []byte(b.String()), 0o644))
}

// apply is one solar fleet apply: each device's action.
func (f *stagedFleet) apply() map[string]string {
	f.t.Helper()
	res, problems, err := pipeline.ApplyFleet(context.Background(),
		pipeline.Options{LoadOptions: pipeline.LoadOptions{Paths: []string{f.tree}, MaxFileSize: 16 << 20}, Log: slog.New(slog.DiscardHandler)},
		pipeline.FleetOptions{Store: f.storeOf(), NATS: f.nats})
	require.NoError(f.t, err)
	require.False(f.t, problems.HasErrors(), "%v", problems)
	out := map[string]string{}
	for _, r := range res {
		require.Empty(f.t, r.Error, r.DeviceID)
		out[r.DeviceID] = r.Action
	}
	return out
}

// waitStates waits until each device of ids reports state (at version).
func (f *stagedFleet) waitStates(ids []string, state, version string) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		s, err := f.bucket.Status(context.Background(), ids...)
		if err != nil || len(s) != len(ids) {
			return false
		}
		for _, x := range s {
			if x.State == nil || x.State.State != state || x.State.Version != version {
				return false
			}
		}
		return true
	}, 2*time.Minute, 200*time.Millisecond, "%v do not all report %s %s", ids, state, version)
}

// rollout is the rollout's state as the registry holds it.
func (f *stagedFleet) rollout() *rolloutstore.Doc {
	f.t.Helper()
	doc, err := rolloutstore.Read(context.Background(), f.storeOf().Store, "fleet", pipeline.DeviceRolloutName("agents"))
	require.NoError(f.t, err)
	require.NotNil(f.t, doc)
	return doc
}

// history is every value the bucket ever held under key, oldest first,
// with its stream sequence.
type entry struct {
	seq   uint64
	value []byte
}

func (f *stagedFleet) history(key string) []entry {
	f.t.Helper()
	h, err := f.kv.History(context.Background(), key)
	if err == jetstream.ErrKeyNotFound {
		return nil
	}
	require.NoError(f.t, err, key)
	var out []entry
	for _, e := range h {
		out = append(out, entry{e.Revision(), e.Value()})
	}
	return out
}

// firstAttempt is the sequence of the first attempt for version device id
// ever saw (0: none).
func (f *stagedFleet) firstAttempt(id, version string) uint64 {
	for _, e := range f.history("attempt." + id) {
		var c wire.Current
		if json.Unmarshal(e.value, &c) == nil && c.Attempt.TargetVersion == version {
			return e.seq
		}
	}
	return 0
}

// firstState is the sequence of the first report of state at version.
func (f *stagedFleet) firstState(id, state, version string) uint64 {
	for _, e := range f.history("state." + id) {
		var s wire.DeviceState
		if json.Unmarshal(e.value, &s) == nil && s.State == state && s.Version == version {
			return e.seq
		}
	}
	return 0
}

// TestStagedUpgrade (issue 50): 30 devices, three waves, everything real:
// nats-server with the auth callout in front, each device's agent logged in
// with its own token, each device's root updater switching the agent it
// downloads from a TLS registry with a login. A good candidate commits wave
// by wave: the bucket's history shows every attempt of a wave written after
// every device of the wave before reported the version committed. A
// candidate that fails strict readiness: the canary's three devices roll
// back on their own, the rollout halts, and no device of a later wave ever
// sees an attempt of it; the state names the devices and their reasons.
func TestStagedUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs NATS, the callout, a provider, a registry and 60 device processes")
	}
	f := newStagedFleet(t, 30, map[string]string{"2.0.0": "v2", "3.0.0": "v3-never-ready"})

	f.declare("2.0.0")
	var waves [][]string
	for pass := 0; ; pass++ {
		require.Less(t, pass, 6, "the rollout did not end in 6 passes")
		actions := f.apply()
		doc := f.rollout()
		if doc.Phase == rollout.Done {
			break
		}
		var admitted []string
		for id, a := range actions {
			if a == "create" {
				admitted = append(admitted, id)
			}
		}
		slices.Sort(admitted)
		if len(admitted) > 0 {
			waves = append(waves, admitted)
			f.waitStates(admitted, wire.PhaseCommitted, "2.0.0")
		}
	}
	require.Len(t, waves, 3, "three waves of attempts")
	assert.Equal(t, []string{"dev-01", "dev-02", "dev-03"}, waves[0], "the canary ring first")
	assert.Len(t, waves[1], 14, "half of the 27 left, rounded up")
	assert.Len(t, waves[2], 13, "the rest")
	for i := 1; i < len(waves); i++ {
		var lastCommit uint64
		for _, id := range waves[i-1] {
			lastCommit = max(lastCommit, f.firstState(id, wire.PhaseCommitted, "2.0.0"))
		}
		for _, id := range waves[i] {
			assert.Greater(t, f.firstAttempt(id, "2.0.0"), lastCommit,
				"%s (wave %d) got its attempt before wave %d had committed", id, i+1, i)
		}
	}

	// A candidate that never becomes ready.
	f.declare("3.0.0")
	actions := f.apply()
	canary := waves[0]
	for _, id := range f.ids {
		want := "held"
		if slices.Contains(canary, id) {
			want = "update"
		}
		assert.Equal(t, want, actions[id], id)
	}
	f.waitStates(canary, wire.PhaseRolledBack, "3.0.0")
	actions = f.apply()
	for _, id := range f.ids {
		want := "held"
		if slices.Contains(canary, id) {
			want = "unchanged"
		}
		assert.Equal(t, want, actions[id], "halted: %s", id)
	}
	doc := f.rollout()
	assert.Equal(t, rollout.Halted, doc.Phase)
	failed := map[string]string{}
	for _, m := range doc.Decision.Members {
		if m.State == rollout.Failed {
			failed[m.Name] = m.Reason
		}
	}
	require.Len(t, failed, 3, "the canary's devices named: %+v", doc.Decision.Members)
	for _, id := range canary {
		assert.Contains(t, failed[id], "rolled-back", id)
	}
	f.apply() // another pass: still nothing
	for _, id := range f.ids[3:] {
		assert.Zero(t, f.firstAttempt(id, "3.0.0"), "%s (a later wave) saw an attempt of the halted candidate", id)
		assert.Equal(t, "2.0.0", f.lastState(id).Version, "%s still runs the version it committed", id)
	}
}

// lastState is what device id reports now.
func (f *stagedFleet) lastState(id string) wire.DeviceState {
	f.t.Helper()
	s, _, err := f.bucket.State(context.Background(), id)
	require.NoError(f.t, err)
	require.NotNil(f.t, s, id)
	return *s
}
