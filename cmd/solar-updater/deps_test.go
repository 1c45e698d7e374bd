package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeviceSideLinksLittle: the root binary on every device links no NATS,
// ORAS, CUE, YAML or Kubernetes package, and nothing of the pipeline.
func TestDeviceSideLinksLittle(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	for _, d := range deps {
		for _, banned := range []string{"nats-io", "oras.land", "cuelang.org", "yaml", "k8s.io", "solar/renderer", "solar/internal/testkit/testenv"} {
			assert.NotContains(t, d, banned, "solar-updater links %s", d)
		}
	}
	assert.LessOrEqual(t, len(deps), 210, "packages linked into solar-updater")
}

// TestFlags: --version prints a version, --help says what the updater is,
// --agent-uid without --agent-gid is refused (it would run the agent with
// gid 4294967295), and so is running probes as root without
// --agent-as-root.
func TestFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestMain built no updater")
	}
	out, err := exec.Command(updaterBin, "--version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotEmpty(t, strings.TrimSpace(string(out)))
	out, _ = exec.Command(updaterBin, "--help").CombinedOutput()
	assert.Contains(t, string(out), "replaces its fleet agent")
	out, err = exec.Command(updaterBin, "--root", t.TempDir(), "--group", "0", "--agent-uid", "5").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "--agent-uid needs --agent-gid")
	out, err = exec.Command(updaterBin, "--root", t.TempDir(), "--group", "0").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "must not run as root", "probes as root only when asked for")
}
