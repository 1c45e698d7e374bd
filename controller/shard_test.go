package controller

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestShardsSplitTheNamespaces: two controllers, one per namespace label
// selector, each leading its own Lease: each publishes only its own
// namespaces, and a namespace that joins a shard (its label set) is
// published by that shard.
func TestShardsSplitTheNamespaces(t *testing.T) {
	e := startEnv(t)
	e.labelNamespace(t, "alpha", "a")
	logs := map[string]*testenv.LockedBuffer{}
	for _, shard := range []string{"a", "b"} {
		opts := e.options(t)
		opts.NamespaceSelector = labels.SelectorFromSet(labels.Set{"solar.opendefense.cloud/shard": shard})
		opts.LeaderElection, opts.LeaderElectionNamespace = true, "shared"
		opts.LeaderElectionID = LeaseName(opts.NamespaceSelector)
		logs[shard] = &testenv.LockedBuffer{}
		opts.Log = slog.New(slog.NewTextHandler(logs[shard], &slog.HandlerOptions{Level: slog.LevelDebug}))
		start(t, opts)
	}
	e.waitVersions(t, map[[2]string]string{{"alpha", "edge-1"}: "0.0.1", {"alpha", "edge-2"}: "0.0.1"}, 2*time.Minute)
	// beta is in no shard yet: each shard saw beta's objects and passed
	// (a positive sign, not a wait), and nobody published it.
	for _, shard := range []string{"a", "b"} {
		require.Eventually(t, func() bool {
			return strings.Contains(logs[shard].String(), "skipped: namespace outside the shard\" namespace=beta")
		}, time.Minute, 50*time.Millisecond, "shard %s never considered beta", shard)
	}
	st, _ := e.targetStatusOf(t, "beta", "plant-1")
	assert.Nil(t, st.Bootstrap, "beta is in no shard")

	e.labelNamespace(t, "beta", "b")
	e.waitReady(t, time.Minute)
	assert.Contains(t, logs["a"].String(), "reconciled namespace=alpha")
	assert.NotContains(t, logs["a"].String(), "reconciled namespace=beta")
	assert.Contains(t, logs["b"].String(), "reconciled namespace=beta")
	assert.NotContains(t, logs["b"].String(), "reconciled namespace=alpha")
	// Each shard leads its own Lease.
	holders := map[string]bool{}
	for _, shard := range []string{"a", "b"} {
		name := LeaseName(labels.SelectorFromSet(labels.Set{"solar.opendefense.cloud/shard": shard}))
		lease, err := e.api.Client.CoordinationV1().Leases("shared").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err, "shard %s's Lease", shard)
		require.NotNil(t, lease.Spec.HolderIdentity)
		holders[*lease.Spec.HolderIdentity] = true
	}
	assert.Len(t, holders, 2, "two leaders")
}

func (e *env) labelNamespace(t *testing.T, ns, shard string) {
	patch := `{"metadata":{"labels":{"solar.opendefense.cloud/shard":"` + shard + `"}}}`
	_, err := e.api.Client.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}
