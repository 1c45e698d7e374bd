package controller

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestIdleIntervalCostsNoAPIRequest: 12 Targets with agents (alpha's) and
// two without (beta's); the controller publishes them and mints every
// agent's credential, then every namespace runs again, unchanged, twice
// (--interval): the second resync sends the API server no request beyond
// its watches. Before the minter read the informers it cost 6 requests per
// agent Target (a ServiceAccount and a TargetReport create, a Role and a
// RoleBinding get, a Secret list, a Target get).
func TestIdleIntervalCostsNoAPIRequest(t *testing.T) {
	e := startEnv(t)
	names := e.cloneTargets(t, "alpha", "edge-1", 10)
	counted := newAPICounter()
	opts := e.options(t)
	opts.Config = counted.config(e.api.Config)
	opts.Interval = 3 * time.Second
	opts.Metrics = prometheus.NewRegistry()
	log := &testenv.LockedBuffer{}
	opts.Log = slog.New(slog.NewTextHandler(log, nil))
	start(t, opts)
	e.waitIssued(t, "alpha", names, 2*time.Minute)

	// One resync of each namespace after every credential was issued (the
	// informers have what the first run wrote), then the idle interval.
	resynced := func(from int) bool {
		l := log.String()[from:]
		return strings.Contains(l, "reconciled namespace=alpha") && strings.Contains(l, "reconciled namespace=beta")
	}
	mark := len(log.String())
	require.Eventually(t, func() bool { return resynced(mark) }, time.Minute, 50*time.Millisecond)
	before, _ := counted.snapshot()
	mark = len(log.String())
	require.Eventually(t, func() bool { return resynced(mark) }, time.Minute, 50*time.Millisecond)
	after, _ := counted.snapshot()
	lines, n := since(before, after)
	writeFigure(t, "controller-idle", fmt.Sprintf("an idle interval (every namespace run again, unchanged), %d agent Targets: %d API requests beyond the watches", len(names), n))
	assert.Zero(t, n, "requests of an idle interval:\n%s", lines)
	assert.NotContains(t, log.String()[mark:], "changed=true")
}

// cloneTargets creates n copies of Target ns/name (NAME-c1 ...) and returns
// the names of every Target of ns.
func (e *env) cloneTargets(t *testing.T, ns, name string, n int) []string {
	ctx := context.Background()
	src, err := e.dyn.Resource(gvr("Target")).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	for i := range n {
		c := &unstructured.Unstructured{Object: map[string]any{"apiVersion": src.GetAPIVersion(), "kind": src.GetKind(),
			"metadata": map[string]any{"name": fmt.Sprintf("%s-c%d", name, i+1), "namespace": ns, "labels": src.GetLabels()},
			"spec":     src.Object["spec"]}}
		_, err := e.dyn.Resource(gvr("Target")).Namespace(ns).Create(ctx, c, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	list, err := e.dyn.Resource(gvr("Target")).Namespace(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, u := range list.Items {
		names = append(names, u.GetName())
	}
	return names
}

// waitIssued waits until every Target of names in ns is Ready with its
// agent credential issued.
func (e *env) waitIssued(t *testing.T, ns string, names []string, within time.Duration) {
	require.Eventually(t, func() bool {
		for _, name := range names {
			st, _ := e.targetStatusOf(t, ns, name)
			ready, cred := findCondition(st.Conditions, "Ready"), findCondition(st.Conditions, "AgentCredentialReady")
			if ready == nil || ready.Status != metav1.ConditionTrue || cred == nil || cred.Reason != "Issued" {
				return false
			}
		}
		return true
	}, within, 200*time.Millisecond, "every Target of %s Ready, its credential issued", ns)
}
