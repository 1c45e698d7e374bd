package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/rollout"
)

// rolloutTrees writes the input before a change and after it under a
// Rollout of one canary, a third and the rest (testenv.RolloutInput).
func rolloutTrees(t *testing.T) (before, after string) {
	t.Helper()
	write := func(input string) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "input.yaml"), []byte(input), 0o644))
		return dir
	}
	return write(testenv.RolloutInput(1, "")), write(testenv.RolloutInput(2, testenv.ThreeWaves("10m", "Halt")))
}

// admitted are the Targets a report gives the new bootstrap chart, and
// held those it holds.
func admitted(r pipeline.Report) (admitted, held []string) {
	for _, tg := range r.Targets {
		switch {
		case tg.Rollout == nil:
		case tg.Rollout.State == rollout.Held:
			held = append(held, tg.Name)
		default:
			admitted = append(admitted, tg.Name)
		}
	}
	return admitted, held
}

// TestRolloutThroughKills (issue 49, done-when 4): solar publish of a
// change under a Rollout, killed with SIGKILL after the rollout's state is
// written (before it is confirmed), after every state holds (before any
// bootstrap chart is published) and before the namespace index is written,
// then run again, ends where a clean run ends: the canary admitted and
// published, the 11 others held with their bootstrap charts untouched.
// Then two publishes at once, three times: never more than the canary
// admitted.
func TestRolloutThroughKills(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills solar publish against a real registry and API server")
	}
	bin := testenv.SolarBinary(t, "killpoints")
	before, after := rolloutTrees(t)
	api := testenv.StartAPIServer(t)
	api.CreateNamespaces(t, "alpha")
	run := func(reg *testenv.Registry, env, tree string, more ...string) *exec.Cmd {
		args := append([]string{"publish", "--no-credentials", tree, "--kubeconfig", api.Kubeconfig, "--registry", reg.Host + "/solar",
			"--plain-http", "--username", reg.Username, "--password-stdin"}, more...)
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(reg.Password + "\n")
		if env != "" {
			cmd.Env = append(os.Environ(), env)
		}
		return cmd
	}
	check := func(reg *testenv.Registry, what string) {
		t.Helper()
		b, err := run(reg, "", after, "--dry-run", "-o", "json").Output()
		require.NoError(t, err, what)
		r := decodeReport(t, string(b))
		in, held := admitted(r)
		assert.Equal(t, []string{"t01"}, in, "%s: the canary only", what)
		assert.Len(t, held, 11, what)
		for _, tg := range r.Targets {
			if tg.Name == "t01" {
				assert.Equal(t, "0.0.2", tg.Version, "%s: the canary's chart published once", what)
				assert.Equal(t, "unchanged", tg.Action, what)
			} else {
				assert.Equal(t, "0.0.1", tg.Version, "%s: %s untouched", what, tg.Name)
			}
		}
		verify := exec.Command(bin, "verify", "--registry", reg.Host+"/solar", "--plain-http", "--username", reg.Username, "--password-stdin")
		verify.Stdin = strings.NewReader(reg.Password + "\n")
		out, err := verify.CombinedOutput()
		require.NoError(t, err, "%s: verify: %s", what, out)
	}
	for _, point := range []string{"document-written", "rollout-decided", "index-commit"} {
		reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
		out, err := run(reg, "", before).CombinedOutput()
		require.NoError(t, err, "%s", out)
		err = run(reg, "SOLAR_KILLPOINT="+point, after).Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, point)
		require.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), "killed at %s", point)
		out, err = run(reg, "", after).CombinedOutput()
		require.NoError(t, err, "after a kill at %s: %s", point, out)
		check(reg, "after a kill at "+point)
	}
	for round := range 3 {
		reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
		out, err := run(reg, "", before).CombinedOutput()
		require.NoError(t, err, "%s", out)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				out, err := run(reg, "", after).CombinedOutput()
				assert.NoError(t, err, "round %d: %s", round, out)
			})
		}
		wg.Wait()
		check(reg, fmt.Sprintf("round %d of two publishes at once", round))
	}
}
