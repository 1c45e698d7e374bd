package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// TestFluxSettingsReachOnlyAppHelmReleases: the PipelineConfig's spec.flux
// timeout and retries change the HelmRelease of every application (the
// object the release chart makes) and nothing else: the bootstrap chart's
// HelmReleases and the first-contact one keep their policy (no timeout,
// three retries, no wait), and the bootstrap charts change only in the
// versions of the release charts they name.
func TestFluxSettingsReachOnlyAppHelmReleases(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	out := filepath.Join(dir, "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, examples)
	require.Equal(t, 0, code, stderr)

	config := filepath.Join(examples, "shared", "pipeline.yaml")
	b, err := os.ReadFile(config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(config, append(b, "  flux:\n    timeout: 10m\n    retries: 5\n"...), 0o644))

	code, stdout, stderr := solar(t, "diff", "--no-app-charts", "--no-credentials", "-o", "json", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	var d pipeline.DiffReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &d), stdout)
	apps := 0
	for _, o := range d.Objects {
		name := o.Action + " " + o.Object.String()
		if o.Kind == "OCIRepository" {
			assert.Equal(t, 1, o.Level, name)
			assert.Contains(t, o.Diff, "-    tag: 0.0.1\n+    tag: 0.0.2\n", "%s: only the release chart's new version", name)
			continue
		}
		require.Equal(t, "HelmRelease", o.Kind, name)
		require.Equal(t, 2, o.Level, "%s: only the release charts' HelmReleases (the applications') change", name)
		apps++
		assert.Contains(t, o.Diff, "+  timeout: 10m0s\n", name)
		assert.Equal(t, 2, strings.Count(o.Diff, "-      retries: 3\n+      retries: 5\n"), "%s: install and upgrade retries\n%s", name, o.Diff)
	}
	assert.Equal(t, 8, apps, "every application of every Target of examples/")

	code, stdout, stderr = solar(t, "bootstrap-manifests", "edge-1", examples, "-n", "alpha", "--registry", "registry.example.com")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, "timeout:", "the first-contact HelmRelease does not wait")
	assert.Contains(t, stdout, "retries: 3")
}
