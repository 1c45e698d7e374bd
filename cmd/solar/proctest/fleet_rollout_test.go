package proctest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// fleetDevices are the devices of fleetTree: two waves, a canary of two
// and the rest.
var fleetDevices = []string{"d1", "d2", "d3", "d4", "d5", "d6"}

// fleetTree writes the Devices and a DeviceUpgrade of them to 1.4.0 in two
// waves.
func fleetTree(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, id := range fleetDevices {
		fmt.Fprintf(&b, "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Device\nmetadata: {name: %s, namespace: fleet, labels: {ring: field}}\n"+
			"spec: {deviceId: %s, platform: linux/amd64}\n---\n", id, id)
	}
	b.WriteString(`apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: field, namespace: fleet}
spec:
  agentVersion: 1.4.0
  artifact: fleet/agent:1.4.0
  deviceSelector: {matchLabels: {ring: field}}
  rollout:
    waves:
      - {name: canary, count: 2}
      - {name: rest}
`)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(b.String()), 0o644))
	return dir
}

// fleetRun is a registry with the agent 1.4.0 pushed, a NATS server, and
// solar fleet apply of tree against both, killed where env says.
type fleetRun struct {
	t    *testing.T
	bin  string
	tree string
	reg  *testenv.Registry
	nats *testenv.NATS
	kv   jetstream.KeyValue
}

func newFleetRun(t *testing.T, bin, tree string) *fleetRun {
	t.Helper()
	f := &fleetRun{t: t, bin: bin, tree: tree, reg: testenv.StartRegistry(t, testenv.RegistryOptions{}), nats: testenv.StartNATS(t)}
	agent := filepath.Join(t.TempDir(), "agent")
	require.NoError(t, os.WriteFile(agent, []byte("#!/bin/sh\necho an agent\n"), 0o755))
	out, err := f.cmd("", "fleet", "push-agent", "--repository", "fleet/agent", "--version", "1.4.0", agent+"=linux/amd64").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return f
}

func (f *fleetRun) cmd(env string, args ...string) *exec.Cmd {
	args = append(args, "--registry", f.reg.Host+"/solar", "--plain-http", "--username", f.reg.Username, "--password-stdin")
	cmd := exec.Command(f.bin, args...)
	cmd.Stdin = strings.NewReader(f.reg.Password + "\n")
	if env != "" {
		cmd.Env = append(os.Environ(), env)
	}
	return cmd
}

// apply runs solar fleet apply, killed at point when set.
func (f *fleetRun) apply(point string) ([]byte, error) {
	env := ""
	if point != "" {
		env = "SOLAR_KILLPOINT=" + point
	}
	return f.cmd(env, "fleet", "apply", "--cache-dir", "", "--nats", f.nats.URL, f.tree).CombinedOutput()
}

// killed runs apply killed at point and checks that it was.
func (f *fleetRun) killed(point string) {
	f.t.Helper()
	out, err := f.apply(point)
	var exit *exec.ExitError
	require.ErrorAs(f.t, err, &exit, "%s: %s", point, out)
	require.Equal(f.t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), "killed at %s: %s", point, out)
}

// attempts are how many attempts each device's key ever held (none
// before the bucket exists).
func (f *fleetRun) attempts() map[string]int {
	f.t.Helper()
	out := map[string]int{}
	if f.kv == nil {
		_, js := f.nats.Connect(f.t)
		kv, err := js.KeyValue(context.Background(), "solar-fleet")
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return out // no pass created it yet
		}
		require.NoError(f.t, err)
		f.kv = kv
	}
	for _, id := range fleetDevices {
		h, err := f.kv.History(context.Background(), "attempt."+id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		require.NoError(f.t, err)
		out[id] = len(h)
	}
	return out
}

// commit writes what a device's agent reports once 1.4.0 is committed.
func (f *fleetRun) commit(ids ...string) {
	f.t.Helper()
	for _, id := range ids {
		_, err := f.kv.Put(context.Background(), "state."+id, []byte(`{"state":"committed","version":"1.4.0"}`))
		require.NoError(f.t, err)
	}
}

// waveOf checks that exactly n devices hold one attempt each and the others
// none, and returns those n.
func waveOf(t *testing.T, got map[string]int, n int, what string) []string {
	t.Helper()
	var ids []string
	for id, c := range got {
		assert.Equal(t, 1, c, "%s: %s got %d attempts for one wave", what, id, c)
		ids = append(ids, id)
	}
	slices.Sort(ids)
	require.Len(t, ids, n, "%s: devices with an attempt %v", what, got)
	return ids
}

// TestFleetRolloutThroughKills (issue 50, done-when 4): solar fleet apply of
// a DeviceUpgrade in two waves, killed with SIGKILL after the rollout's state
// is written (before it is confirmed: document-written), after it holds
// (before any attempt: fleet-rollout-decided) and after the first device's
// attempt is written (attempt-written), then run again: the canary's two
// devices hold one attempt each, the four others none. Once the canary
// reports committed, a run killed after the second wave's second attempt
// and run again gives each of the rest one attempt: none twice, none
// skipped. Then two applies at once, three times: never more than the
// canary.
func TestFleetRolloutThroughKills(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills solar fleet apply against a real registry and NATS")
	}
	bin := testenv.SolarBinary(t, "killpoints")
	tree := fleetTree(t)
	for _, point := range []string{"document-written", "fleet-rollout-decided", "attempt-written"} {
		f := newFleetRun(t, bin, tree)
		f.killed(point)
		out, err := f.apply("")
		require.NoError(t, err, "after a kill at %s: %s", point, out)
		canary := waveOf(t, f.attempts(), 2, "after a kill at "+point)

		f.commit(canary...)
		f.killed("attempt-written#2")
		out, err = f.apply("")
		require.NoError(t, err, "after a kill in the second wave: %s", out)
		assert.Len(t, waveOf(t, f.attempts(), 6, "after a kill in the second wave"), 6)
	}
	for round := range 3 {
		f := newFleetRun(t, bin, tree)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				out, err := f.apply("")
				if err != nil { // the other writer's attempt came first: as without waves
					assert.Contains(t, string(out), "changed underneath you", "round %d", round)
				}
			})
		}
		wg.Wait()
		waveOf(t, f.attempts(), 2, fmt.Sprintf("round %d of two applies at once", round))
	}
}

// controller starts solar controller as the fleet's pass against f and
// api, killed at point when set; wait waits for its end, stop kills it.
func (f *fleetRun) controller(api *testenv.APIServer, point string) (cmd *exec.Cmd, wait func() error) {
	f.t.Helper()
	env := ""
	if point != "" {
		env = "SOLAR_KILLPOINT=" + point
	}
	cmd = f.cmd(env, "controller", "--kubeconfig", api.Kubeconfig, "--nats", f.nats.URL, "--leader-elect=false",
		"--metrics-addr", "0", "--health-addr", "0", "--cache-dir", "")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(f.t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	f.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if f.t.Failed() {
			f.t.Logf("controller (%s):\n%s", point, logs.String())
		}
	})
	return cmd, func() error {
		select {
		case err := <-exited:
			return err
		case <-time.After(2 * time.Minute):
			return errors.New("the controller did not exit within 2 minutes")
		}
	}
}

// killedController runs the controller until it kills itself at point.
func (f *fleetRun) killedController(api *testenv.APIServer, point string) {
	f.t.Helper()
	_, wait := f.controller(api, point)
	err := wait()
	var exit *exec.ExitError
	require.ErrorAs(f.t, err, &exit, point)
	require.Equal(f.t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), "killed at %s", point)
}

// settled waits until n devices hold an attempt, then a moment more.
func (f *fleetRun) settled(n int) map[string]int {
	f.t.Helper()
	require.Eventually(f.t, func() bool { return len(f.attempts()) >= n }, 2*time.Minute, 200*time.Millisecond,
		"%d devices with an attempt", n)
	time.Sleep(2 * time.Second)
	return f.attempts()
}

// TestControllerFleetThroughKills (issue 50, done-when 4): solar controller
// as the fleet's pass, killed with SIGKILL after the rollout's state holds
// (before any attempt), then started again: the canary's two devices hold
// one attempt each, no other device any. Once they report committed, a
// controller killed after the second wave's second attempt and started
// again gives each of the rest one attempt: none twice, none skipped.
func TestControllerFleetThroughKills(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills solar controller against a real API server, registry and NATS")
	}
	bin := testenv.SolarBinary(t, "killpoints")
	tree := fleetTree(t)
	api := testenv.StartAPIServer(t)
	api.CreateNamespaces(t, "fleet")
	out, err := exec.Command(testenv.Tool(t, "kubectl"), "--kubeconfig", api.Kubeconfig, "apply", "-f", filepath.Join(tree, "fleet.yaml")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	f := newFleetRun(t, bin, tree)

	f.killedController(api, "fleet-rollout-decided")
	ctl, _ := f.controller(api, "")
	canary := waveOf(t, f.settled(2), 2, "after a kill before any attempt")
	require.NoError(t, ctl.Process.Kill())

	f.commit(canary...)
	f.killedController(api, "attempt-written#2")
	f.controller(api, "")
	waveOf(t, f.settled(6), 6, "after a kill in the second wave")
}
