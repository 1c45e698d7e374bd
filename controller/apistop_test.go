package controller

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestAPIServerDownForAMinute: the API server stops for a minute under a
// running controller. Its runs go on from its caches (the minter reads its
// informers: an unchanged credential needs no request), none fails, and
// once the API server is back every Target is Ready with the same tokens,
// the controller never restarted. (Before the minter read informers, every
// run failed with MintFailed in that minute and was retried with backoff.)
func TestAPIServerDownForAMinute(t *testing.T) {
	e := startEnv(t)
	opts := e.options(t)
	opts.LeaderElection = false
	opts.Interval = 2 * time.Second
	reg := prometheus.NewRegistry()
	logs := &testenv.LockedBuffer{}
	opts.Metrics, opts.Log = reg, slog.New(slog.NewTextHandler(logs, nil))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = Run(t.Context(), opts)
	}()
	e.waitReady(t, 2*time.Minute)
	before := e.tokens(t)

	e.api.Stop()
	down := time.Now()
	during := counter(t, reg, "solar_namespace_runs_total", "unchanged")
	require.Eventually(t, func() bool { return counter(t, reg, "solar_namespace_runs_total", "unchanged") >= during+4 },
		time.Minute, 100*time.Millisecond, "runs go on from the caches while the API server is down")
	time.Sleep(time.Until(down.Add(time.Minute)))
	failed := counter(t, reg, "solar_namespace_runs_total", "error")
	assert.Zero(t, failed, "no run failed")
	assert.NotContains(t, logs.String(), "MintFailed")
	e.api.Restart(t)
	back := time.Now()

	ok := counter(t, reg, "solar_namespace_runs_total", "unchanged")
	require.Eventually(t, func() bool { return counter(t, reg, "solar_namespace_runs_total", "unchanged") >= ok+2 },
		time.Minute, 100*time.Millisecond, "both namespaces run through once the API server is back")
	e.waitReady(t, time.Minute)
	for _, name := range []string{"edge-1", "edge-2"} {
		st, _ := e.targetStatusOf(t, "alpha", name)
		c := findCondition(st.Conditions, "AgentCredentialReady")
		require.NotNil(t, c)
		assert.Equal(t, "Issued", c.Reason, name)
		assert.Equal(t, metav1.ConditionTrue, c.Status, name)
	}
	assert.Equal(t, before, e.tokens(t), "the tokens outlived the outage: none was minted again")
	select {
	case <-stopped:
		t.Fatal("the controller stopped")
	default:
	}
	t.Logf("%v runs from the caches in the minute down, none failed; every Target Ready %s after the API server was back",
		counter(t, reg, "solar_namespace_runs_total", "unchanged")-during, time.Since(back).Round(10*time.Millisecond))
}

// tokens are the agent tokens' Secrets of alpha, by name.
func (e *env) tokens(t *testing.T) []string {
	l, err := e.api.Client.CoreV1().Secrets("alpha").List(context.Background(), metav1.ListOptions{LabelSelector: "solar.opendefense.cloud/agent-token-for"})
	require.NoError(t, err)
	var out []string
	for _, s := range l.Items {
		out = append(out, s.Name)
	}
	return out
}

// TestLeaderLosesTheLeaseAndCampaignsAgain: a leader whose API server stops
// for longer than its renew deadline loses the Lease; it campaigns again in
// the same process and, leading again, publishes the next change.
func TestLeaderLosesTheLeaseAndCampaignsAgain(t *testing.T) {
	e := startEnv(t)
	opts := e.options(t)
	opts.LeaderElection, opts.LeaderElectionNamespace = true, "shared"
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 250*time.Millisecond
	logs := &testenv.LockedBuffer{}
	opts.Log = slog.New(slog.NewTextHandler(logs, nil))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = Run(t.Context(), opts)
	}()
	e.waitReady(t, 2*time.Minute)
	first := e.leaseHolder(t, "solar-controller")
	require.NotEmpty(t, first)

	e.api.Stop()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "campaigning again") },
		time.Minute, 100*time.Millisecond, "the leader loses the Lease")
	e.api.Restart(t)
	// A manager made again campaigns under a new identity.
	require.Eventually(t, func() bool { h := e.leaseHolder(t, "solar-controller"); return h != "" && h != first },
		time.Minute, 100*time.Millisecond, "it leads again")

	e.changeRelease(t, "alpha", "metrics", map[string]any{"replicas": int64(3)})
	e.waitVersions(t, map[[2]string]string{{"alpha", "edge-1"}: "0.0.2", {"beta", "plant-1"}: "0.0.2"}, time.Minute)
	select {
	case <-stopped:
		t.Fatal("the controller stopped")
	default:
	}
}

// leaseHolder is the holder of Lease shared/name, "" when none.
func (e *env) leaseHolder(t *testing.T, name string) string {
	l, err := e.api.Client.CoordinationV1().Leases("shared").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
