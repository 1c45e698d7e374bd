package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestRolloutPassRequests measures what a Rollout costs a publish in
// registry requests (issue 49, done-when 5), beside a plain publish of the
// same change in the same run: 12 Targets of one namespace, one Release
// changed. A Rollout's pass reads its state (the tags, the manifest, the
// layer), on a new revision asks what would change (the index answers: no
// request), writes the state (its blobs, the version checked free, the
// manifest) and reads it back after the settle; a held Target's bootstrap
// chart costs nothing. The pass after it, with nothing to change, reads the
// state and the admitted canary's bootstrap chart (solar status) and
// writes nothing more than a plain no-op does, but for the state's time.
func TestRolloutPassRequests(t *testing.T) {
	needRegistry(t)
	api := testenv.StartAPIServer(t)
	api.CreateNamespaces(t, "alpha")
	count := func(policy string) (change, again int) {
		reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
		proxy := testenv.StartProxy(t, reg.Host)
		dir := t.TempDir()
		pub := func(replicas int) int {
			t.Helper()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "input.yaml"), []byte(testenv.RolloutInput(replicas, policy)), 0o644))
			proxy.Take()
			code, _, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", proxy.Host+"/solar",
				"--kubeconfig", api.Kubeconfig, dir)
			require.Equal(t, 0, code, stderr)
			return len(proxy.Take())
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "input.yaml"), []byte(testenv.RolloutInput(1, "")), 0o644))
		code, _, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", proxy.Host+"/solar", dir)
		require.Equal(t, 0, code, stderr)
		return pub(2), pub(2)
	}
	plainChange, plainAgain := count("")
	rolloutChange, rolloutAgain := count(testenv.ThreeWaves("10m", "Halt"))
	t.Logf("registry requests: the change %d plain, %d under a Rollout (the canary only); the pass after it %d plain, %d under a Rollout",
		plainChange, rolloutChange, plainAgain, rolloutAgain)
	assert.Less(t, rolloutChange, plainChange, "11 held bootstrap charts cost more than the rollout's state")
	assert.LessOrEqual(t, rolloutAgain-plainAgain, 12, "a pass with nothing to admit: the state read and written, the canary's chart read")
}
