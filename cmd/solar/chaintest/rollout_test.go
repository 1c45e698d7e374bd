package chaintest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/helmdriver"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/rollout"
)

// TestRolloutRollsBackAFailingCanary (issue 49, done-when 2, on the chain's
// real parts): under a Rollout of alpha (a canary, then the rest;
// onFailure Rollback), a change whose application never becomes ready
// reaches edge-1 only; edge-2's bootstrap chart never moves. Once edge-1's
// agent reports the upgrade Failed (helm-controller's retries spent), the
// next publish fails the canary and publishes edge-1's previous bootstrap
// content again; Flux installs it by its ordinary upgrade and every
// application is Available again.
func TestRolloutRollsBackAFailingCanary(t *testing.T) {
	e := startChain(t, chainOptions{driver: helmdriver.Options{Timeout: 10 * time.Second}})
	events, err := e.settle(3 * time.Minute)
	require.NoError(t, err, "events: %v\nnot Ready: %v", events, e.notReadyHelmReleases())
	require.NoError(t, os.WriteFile(filepath.Join(e.examples, "alpha", "rollout.yaml"), []byte(`apiVersion: solar.opendefense.cloud/v1alpha1
kind: Rollout
metadata: {name: edge, namespace: alpha}
spec:
  waves:
    - {name: canary, count: 1, progressDeadline: 10m}
    - {name: rest}
  onFailure: Rollback
`), 0o644))
	edge2 := e.reports["alpha/edge-2"]

	e.edit("alpha/releases.yaml", "replicaCount: 2", "replicaCount: 2\n    nodeSelector:\n      solar.example/pool: none")
	r := e.publishReport()
	require.Len(t, r.Rollouts, 1)
	assert.Equal(t, edge2.Version, target(r, "edge-2").Version, "edge-2's bootstrap chart stays")
	canary := target(r, "edge-1")
	require.NotNil(t, canary.Rollout)
	assert.Equal(t, rollout.Admitted, canary.Rollout.State)
	_, err = e.settle(3 * time.Minute)
	require.ErrorContains(t, err, "stalled: flux-alpha-edge-1/", "the canary's application fails")

	e.agentReport(buildAgent(t), "alpha/edge-1")
	r = e.publishReport()
	require.Len(t, r.Rollouts, 1)
	assert.Equal(t, rollout.RolledBack, r.Rollouts[0].Phase)
	back := target(r, "edge-1")
	require.NotNil(t, back.Rollout)
	assert.Equal(t, rollout.Reverted, back.Rollout.State)
	assert.Contains(t, r.Rollouts[0].Message, "wave canary failed")
	for _, m := range r.Rollouts[0].Members {
		if m.Name == "edge-1" {
			assert.Contains(t, m.Reason, "Failed to upgrade after 4 attempt(s)", "helm-controller's message")
		}
	}
	assert.Equal(t, "update", back.Action, "the previous content at a new version")
	assert.Equal(t, edge2.Version, target(r, "edge-2").Version)

	// The stalled application HelmRelease stays stalled until its parent
	// upgrades to the previous release chart and gives it its previous
	// spec: settle until then.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		events, err = e.settle(time.Until(deadline))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	require.NoError(t, err, "after the rollback every HelmRelease is Ready: events %v, not Ready: %v", events, e.notReadyHelmReleases())
	for _, tg := range e.targets {
		for key, n := range e.names[tg.ns+"/"+tg.name] {
			ok, why := e.available(n.TargetNamespace, n.AppRelease)
			assert.True(t, ok, "%s/%s %s: Available: %s", tg.ns, tg.name, key, why)
		}
	}
}

// target is the report of Target name.
func target(r pipeline.Report, name string) pipeline.TargetReport {
	for _, tg := range r.Targets {
		if tg.Name == name {
			return tg
		}
	}
	return pipeline.TargetReport{}
}
