package controller

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/load"
)

// TestShardsOnThreeReplicas: --shards 3 on three replicas (solar
// controller processes, a 3 s lease) against one API server, 12
// namespaces: each replica leads one shard, and each namespace, changed,
// is reconciled by exactly one replica, the one leading its shard. One
// replica is killed (SIGKILL: its Leases are not released); the survivors
// take its shard over once its Lease expires, and reconcile its
// namespaces.
func TestShardsOnThreeReplicas(t *testing.T) {
	const shardCount, namespaces, lease = 3, 12, 3 * time.Second
	e := startGenerated(t, namespaces*2, 2)
	bin := testenv.SolarBinary(t)
	var reps []*replica
	for _, name := range []string{"a", "b", "c"} {
		reps = append(reps, e.startReplica(t, bin, name, e.registry.Host, "--shards", fmt.Sprint(shardCount)))
	}
	e.waitAllReady(t, 3*time.Minute)

	leaders := e.shardLeaders(t, reps, shardCount)

	// Every namespace changed: each is run by exactly the replica of its
	// shard.
	marks := map[*replica]int{}
	for _, r := range reps {
		marks[r] = len(r.log.String())
	}
	byShard := map[int][]string{}
	for i := range namespaces {
		ns := fmt.Sprintf("ns-%04d", i)
		byShard[ShardOf(ns, shardCount)] = append(byShard[ShardOf(ns, shardCount)], ns)
		e.touchTarget(t, ns, "target-0")
	}
	ranBy := func(ns string) []string { return ranBy(reps, marks, ns) }
	require.Eventually(t, func() bool {
		for i := range namespaces {
			if len(ranBy(fmt.Sprintf("ns-%04d", i))) == 0 {
				return false
			}
		}
		return true
	}, time.Minute, 100*time.Millisecond, "every namespace runs")
	for shard, list := range byShard {
		for _, ns := range list {
			assert.Equal(t, []string{leaders[shard].name}, ranBy(ns), "%s (shard %d) run by", ns, shard)
		}
	}

	// Kill the leader of the shard with the most namespaces.
	victim := 0
	for s := range shardCount {
		if len(byShard[s]) > len(byShard[victim]) {
			victim = s
		}
	}
	dead := leaders[victim]
	for _, r := range reps {
		marks[r] = len(r.log.String())
	}
	require.NoError(t, dead.cmd.Process.Kill())
	killed := time.Now()
	var leased time.Duration
	require.Eventually(t, func() bool {
		holder := e.leaseHolder(t, fmt.Sprintf("solar-controller-shard-%d", victim))
		if leased == 0 && holder != "" && !strings.Contains(dead.log.String(), "identity="+holder) {
			leased = time.Since(killed)
		}
		for _, ns := range byShard[victim] {
			survivor := func(name string) bool { return name != dead.name }
			if !slices.ContainsFunc(ranBy(ns), survivor) {
				return false
			}
		}
		return true
	}, time.Minute, 50*time.Millisecond, "the survivors take over shard %d (%v)", victim, byShard[victim])
	done := time.Since(killed)
	figure := fmt.Sprintf("3 shards on 3 replicas, lease 3s, retry 250ms: a killed replica's shard Lease taken %s after the kill, its %d namespaces reconciled by a survivor %s after it",
		leased.Round(10*time.Millisecond), len(byShard[victim]), done.Round(10*time.Millisecond))
	writeFigure(t, "shards-takeover", figure)
	assert.NotZero(t, leased)
	assert.Less(t, leased, lease+5*time.Second, "taken over once its Lease expired (and a loaded machine's seconds)")
}

// shardLeaders waits until each replica leads one shard (one started
// later than the others is given its share) and returns them by shard, as
// the Leases and the replicas' logs say.
func (e *env) shardLeaders(t *testing.T, reps []*replica, n int) map[int]*replica {
	leaders := map[int]*replica{}
	identity := regexp.MustCompile(`leading shard" shard=(\d+) of=\d+ identity=(\S+)`)
	require.Eventually(t, func() bool {
		clear(leaders)
		for _, r := range reps {
			for _, m := range identity.FindAllStringSubmatch(r.log.String(), -1) {
				var shard int
				_, _ = fmt.Sscan(m[1], &shard)
				if e.leaseHolder(t, fmt.Sprintf("solar-controller-shard-%d", shard)) == m[2] {
					leaders[shard] = r
				}
			}
		}
		distinct := map[*replica]bool{}
		for _, r := range leaders {
			distinct[r] = true
		}
		return len(leaders) == n && len(distinct) == n
	}, time.Minute, 100*time.Millisecond, "each replica leads one shard")
	return leaders
}

// ranBy are the replicas whose log says they ran ns since their marks.
func ranBy(reps []*replica, marks map[*replica]int, ns string) []string {
	var by []string
	for _, r := range reps {
		if strings.Contains(r.log.String()[marks[r]:], "reconciled namespace="+ns+" ") {
			by = append(by, r.name)
		}
	}
	return by
}

// touchTarget sets an annotation of Target ns/name: its namespace runs.
func (e *env) touchTarget(t *testing.T, ns, name string) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/touched":"%d"}}}`, time.Now().UnixNano())
	_, err := e.dyn.Resource(gvr("Target")).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// startGenerated is an API server holding scripts/genobjects' Targets
// (per a namespace, 5 Releases each) and a plain-HTTP registry; the
// replicas' Leases go to namespace shared.
func startGenerated(t testing.TB, targets, per int, edit ...func(*load.Object)) *env {
	api := testenv.StartAPIServer(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	dir := t.TempDir()
	gen := exec.Command("go", "run", "./scripts/genobjects", "-targets", fmt.Sprint(targets), "-per", fmt.Sprint(per), "-out", dir)
	gen.Dir = testenv.Root(t)
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "%s", out)
	objs, problems, _ := load.Paths([]string{dir}, load.Options{})
	require.False(t, problems.HasErrors(), "%v", problems)
	fast := rest.CopyConfig(api.Config)
	fast.QPS, fast.Burst = -1, 0 // setting up: no client-side limit
	dyn, err := dynamic.NewForConfig(fast)
	require.NoError(t, err)
	api.CreateNamespaces(t, "shared")
	seen := map[string]bool{}
	for _, o := range objs {
		for _, f := range edit {
			f(o)
		}
		if !seen[o.Namespace] {
			seen[o.Namespace] = true
			api.CreateNamespaces(t, o.Namespace)
		}
		_, err := dyn.Resource(gvr(o.Kind)).Namespace(o.Namespace).Create(context.Background(),
			&unstructured.Unstructured{Object: o.Fields}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return &env{api: api, registry: reg, dyn: dyn}
}

// waitAllReady waits until every Target in the API server is Ready with a
// bootstrap chart.
func (e *env) waitAllReady(t *testing.T, within time.Duration) {
	require.Eventually(t, func() bool {
		list, err := e.dyn.Resource(gvr("Target")).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, u := range list.Items {
			var st targetStatus
			if raw, ok := u.Object["status"].(map[string]any); ok {
				require.NoError(t, fromUnstructured(raw, &st))
			}
			c := findCondition(st.Conditions, "Ready")
			if c == nil || c.Status != metav1.ConditionTrue || st.Bootstrap == nil {
				return false
			}
		}
		return len(list.Items) > 0
	}, within, 200*time.Millisecond, "every Target Ready")
}

// TestShardsGoToAReplicaThatJoins: two replicas share three shards (one
// leads two); a third replica started later gets its share: the replica
// with two lets one go, and each then leads one.
func TestShardsGoToAReplicaThatJoins(t *testing.T) {
	e := startGenerated(t, 6*2, 2)
	bin := testenv.SolarBinary(t)
	holders := func() map[string]int {
		out := map[string]int{}
		for i := range 3 {
			if h := e.leaseHolder(t, fmt.Sprintf("solar-controller-shard-%d", i)); h != "" {
				out[h]++
			}
		}
		return out
	}
	for _, name := range []string{"a", "b"} {
		e.startReplica(t, bin, name, e.registry.Host, "--shards", "3")
	}
	require.Eventually(t, func() bool {
		h := holders()
		return len(h) == 2 && h[maxKey(h)] == 2
	}, 2*time.Minute, 100*time.Millisecond, "two replicas lead the three shards, one of them two")
	joined := e.startReplica(t, bin, "c", e.registry.Host, "--shards", "3")
	require.Eventually(t, func() bool {
		h := holders()
		return len(h) == 3 && h[maxKey(h)] == 1
	}, 2*time.Minute, 100*time.Millisecond, "each of three replicas leads one shard: %v", holders())
	// Said after the Lease is written (client-go calls OnStartedLeading
	// once it holds it), and read through the replica's pipe: waited for.
	assert.Eventually(t, func() bool { return strings.Contains(joined.log.String(), "leading shard") },
		30*time.Second, 100*time.Millisecond, "the joined replica says it leads a shard")
	e.waitAllReady(t, time.Minute)
}

func maxKey(m map[string]int) string {
	best := ""
	for k, v := range m {
		if best == "" || v > m[best] {
			best = k
		}
	}
	return best
}
