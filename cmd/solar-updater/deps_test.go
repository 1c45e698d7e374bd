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
		for _, banned := range []string{"nats-io", "oras.land", "cuelang.org", "yaml", "k8s.io", "solar/renderer", "solar/internal/testenv"} {
			assert.NotContains(t, d, banned, "solar-updater links %s", d)
		}
	}
	assert.LessOrEqual(t, len(deps), 210, "packages linked into solar-updater")
}
