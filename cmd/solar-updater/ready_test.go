package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

// TestStrictReadiness: through real NATS, a candidate whose agent link
// withholds one condition of strict readiness (agentlink) never reports
// ready, and the updater rolls back to the previous agent: the journal and
// the bucket say rolled-back at readiness, with nothing reported (not a
// wrong report: the agent withheld it), and the candidate's log names the
// condition. With every condition met, the candidate commits.
func TestStrictReadiness(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs NATS, updater and agent processes")
	}
	server := startArtifactServer(t)
	d, bucket, kv := natsDevice(t, server, "--ready-timeout", "6s")
	ctx := context.Background()
	for _, tc := range []struct{ condition, build, says string }{
		{"local dependencies", "v2-deps-fail", `err="local dependencies: the workload runtime does not answer`},
		{"NATS", "v2-nats-unreachable", `err="NATS: the connection is`},
		{"snapshot", "v2-snapshot-blocked", `err="desired state: the snapshot of attempt.dev-1 is not complete"`},
		// Built as 2.0.1: the attempt activates it as 2.0.0.
		{"target version", "v2-wrong-version", `this binary is \"2.0.1\""`},
		{"recovery", "v2-recovery-fails", `err="recovery: the previous run's workload mutation cannot be finished`},
		{"startup publication", "v2-publish-refused", `err="startup publication: nats: permissions violation for publish to \"$KV.solar-fleet.state.dev-1\"`},
	} {
		t.Run(tc.condition, func(t *testing.T) {
			// The previous case's outcome gone: what comes is this one's.
			require.NoError(t, kv.Delete(ctx, "state.dev-1"))
			a := applyBuild(t, bucket, server, tc.build, "2.0.0")
			st := reported(t, bucket, wire.PhaseRolledBack)
			assert.Equal(t, "readiness", st.Step, st.Reason)
			assert.Contains(t, st.Reason, "the agent reported nothing", "the candidate withheld readiness")
			j := journalOf(t, d.paths)
			assert.Equal(t, wire.PhaseRolledBack+" readiness "+a.UUID, j.Phase+" "+j.Step+" "+j.Attempt.UUID)
			assert.Equal(t, "v1", selected(t, d.paths, builds))
			assert.Equal(t, "v1", running(t, d.paths, builds))
			log, err := os.ReadFile(d.paths.Log())
			require.NoError(t, err)
			assert.Contains(t, string(log), tc.says, "the candidate says which condition it withholds")
		})
	}

	t.Run("all met", func(t *testing.T) {
		require.NoError(t, kv.Delete(ctx, "state.dev-1"))
		applyBuild(t, bucket, server, "v2", "2.0.0")
		st := reported(t, bucket, wire.PhaseCommitted)
		assert.Equal(t, "2.0.0", st.Running, "the new agent's startup publication and its outcome carry its version")
		assert.Equal(t, "v2", running(t, d.paths, builds))
		var r updater.Readiness
		b, err := os.ReadFile(d.paths.Ready())
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &r))
		assert.Equal(t, "2.0.0", r.Version)
		log, err := os.ReadFile(d.paths.Log())
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(string(log), `msg=ready version=2.0.0`), "reported ready once")
	})
}

// TestStartupPublicationKeepsTheOutcome: the startup publication adds the
// running version to state.<id> and keeps the outcome there: a device
// blocked by rollback-failed stays blocked when its agent restarts.
func TestStartupPublicationKeepsTheOutcome(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs NATS, updater and agent processes")
	}
	server := startArtifactServer(t)
	d, bucket, kv := natsDevice(t, server)
	ctx := context.Background()
	blocked := wire.DeviceState{State: wire.PhaseRollbackFailed, Step: "readiness", Reason: "by hand", At: "2026-01-01T00:00:00Z"}
	v, err := json.Marshal(blocked)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "state.dev-1", v)
	require.NoError(t, err)
	require.NoError(t, d.service.Stop(ctx))
	_ = os.Remove(d.paths.Ready())
	require.NoError(t, d.service.Start(ctx)) // v1 again: it publishes at start
	require.Eventually(t, func() bool { _, err := os.Stat(d.paths.Ready()); return err == nil }, 10*time.Second, 20*time.Millisecond)
	st, _, err := bucket.State(ctx, "dev-1")
	require.NoError(t, err)
	blocked.Running = "1.0.0"
	assert.Equal(t, blocked, *st, "running added before ready, the outcome kept")
}
