package controller

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// replica is one solar controller process.
type replica struct {
	name string
	cmd  *exec.Cmd
	log  *testenv.LockedBuffer
}

// startReplica runs solar controller against e's API server and the
// registry behind host (plain HTTP), with a quick Lease.
func (e *env) startReplica(t *testing.T, bin, name, host string, extra ...string) *replica {
	args := append([]string{"controller", "--kubeconfig", e.api.Kubeconfig,
		"--registry", host + "/solar", "--plain-http", "--username", e.registry.Username, "--password-stdin",
		"--leader-election-namespace", "shared", "--pipeline-config-namespace", "shared", "--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "250ms",
		"--metrics-addr", "0", "--health-addr", "0", "--interval", "1h", "--cache-dir", t.TempDir()}, extra...)
	r := &replica{name: name, log: &testenv.LockedBuffer{}}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Stdin = strings.NewReader(e.registry.Password + "\n")
	r.cmd.Stderr = r.log
	require.NoError(t, r.cmd.Start())
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		if t.Failed() {
			t.Logf("%s's log:\n%s", r.name, r.log.String())
		}
	})
	return r
}

func (r *replica) leads() bool {
	return strings.Contains(r.log.String(), "Successfully acquired lease")
}

// TestLeaderKilledInThePublish: two replicas, one leads; the leader is
// killed (SIGKILL) in the middle of a publish; the other takes the Lease
// and finishes the work, and solar verify finds the store consistent.
func TestLeaderKilledInThePublish(t *testing.T) {
	e := startEnvWith(t, testenv.RegistryOptions{})
	proxy, err := countproxy.Start(e.registry.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	bin := testenv.SolarBinary(t)
	replicas := []*replica{e.startReplica(t, bin, "a", proxy.Host), e.startReplica(t, bin, "b", proxy.Host)}
	e.waitReady(t, 2*time.Minute)
	var leader, other *replica
	for i, r := range replicas {
		if r.leads() {
			leader, other = r, replicas[1-i]
		}
	}
	require.NotNil(t, leader, "one replica holds the Lease")
	require.False(t, other.leads(), "only one replica leads")

	// Kill the leader at the first manifest it pushes after the change: a
	// release chart is written, the bootstrap chart naming it is not.
	var killedAt atomic.Pointer[time.Time]
	proxy.Hook(func(method, path string) {
		if method == "PUT" && strings.Contains(path, "/manifests/") && killedAt.Load() == nil {
			now := time.Now()
			killedAt.Store(&now)
			_ = leader.cmd.Process.Kill()
		}
	})
	e.changeRelease(t, "alpha", "metrics", map[string]any{"replicas": int64(2)})
	require.Eventually(t, func() bool { return killedAt.Load() != nil }, time.Minute, 50*time.Millisecond, "the leader publishes")
	proxy.Hook(nil)

	require.Eventually(t, other.leads, time.Minute, 50*time.Millisecond, "the other replica takes the Lease")
	takeover := time.Since(*killedAt.Load())
	want := map[[2]string]string{{"alpha", "edge-1"}: "0.0.2", {"alpha", "edge-2"}: "0.0.1", {"beta", "plant-1"}: "0.0.2", {"beta", "plant-2"}: "0.0.1"}
	e.waitVersions(t, want, time.Minute)
	done := time.Since(*killedAt.Load())
	t.Logf("leader killed: the other replica led after %s, and every Target was Ready at its new version after %s",
		takeover.Round(10*time.Millisecond), done.Round(10*time.Millisecond))
	writeFigure(t, "takeover", fmt.Sprintf("lease 3s, renew 2s, retry 250ms: Lease taken %s after the kill, all Ready %s after it",
		takeover.Round(10*time.Millisecond), done.Round(10*time.Millisecond)))

	code, out, errOut := testenv.RunSolar(t, bin, e.registry.Password+"\n", "verify", "--registry", e.registry.Host+"/solar",
		"--plain-http", "--username", e.registry.Username, "--password-stdin")
	assert.Equal(t, 0, code, "solar verify: %s\n%s", out, errOut)
}

// changeRelease sets Release ns/name's values.
func (e *env) changeRelease(t *testing.T, ns, name string, values map[string]any) {
	release, err := e.dyn.Resource(gvr("Release")).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(release.Object, values, "spec", "values"))
	_, err = e.dyn.Resource(gvr("Release")).Namespace(ns).Update(context.Background(), release, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// waitVersions waits until every Target of want is Ready at its bootstrap
// version.
func (e *env) waitVersions(t *testing.T, want map[[2]string]string, within time.Duration) {
	require.Eventually(t, func() bool {
		for id, v := range want {
			st, _ := e.targetStatusOf(t, id[0], id[1])
			c := findCondition(st.Conditions, "Ready")
			if st.Bootstrap == nil || st.Bootstrap.Version != v || c == nil || c.Status != metav1.ConditionTrue {
				return false
			}
		}
		return true
	}, within, 100*time.Millisecond, "bootstrap versions %v, all Ready", want)
}

// writeFigure keeps a measured figure where SOLAR_FIGURES points (the
// benchmarks page takes it from there), and logs it.
func writeFigure(t testing.TB, name, text string) {
	t.Logf("figure %s: %s", name, text)
	if dir := os.Getenv("SOLAR_FIGURES"); dir != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".txt"), []byte(text+"\n"), 0o644))
	}
}
