package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// TestDiffShowsTheInstallOrder: a dependency declared on a Release reaches
// the Target's application HelmRelease as spec.dependsOn, which solar diff
// shows and names in the object's header ("waits for"). Only the bootstrap
// charts of the Targets that get the release change: the release chart,
// shared by the Targets of its namespace, does not.
func TestDiffShowsTheInstallOrder(t *testing.T) {
	source := testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true})
	pushPodinfo(t, source.Host)
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	pointExamples(t, examples, source.Host)
	out := filepath.Join(dir, "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	// podinfo-stable (edge-1's podinfo) is installed after metrics.
	p := filepath.Join(examples, "alpha", "releases.yaml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b = bytes.Replace(b, []byte("  priority: 10\n"), []byte("  priority: 10\n  dependencies:\n    - uniqueName: metrics\n"), 1)
	require.NoError(t, os.WriteFile(p, b, 0o644))

	code, stdout, stderr := solar(t, "diff", "--no-credentials", "--exit-code", "--out", out, examples)
	require.Equal(t, 2, code, stderr)
	assert.Contains(t, stdout, "# update HelmRelease flux-system/edge-1-podinfo (level 2) on alpha/edge-1; waits for edge-1-metrics\n")
	assert.Contains(t, stdout, "+  dependsOn:\n+  - name: edge-1-metrics\n")
	assert.NotContains(t, stdout, "HelmRelease flux-system/edge-1-metrics (level 2)", "the dependency itself does not change")

	code, stdout, stderr = solar(t, "diff", "--no-credentials", "--exit-code", "-o", "json", "--out", out, examples)
	require.Equal(t, 2, code, stderr)
	var d pipeline.DiffReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &d), stdout)
	var charts []string
	for _, c := range d.Charts {
		charts = append(charts, c.Repository)
	}
	assert.Equal(t, []string{"alpha/bootstrap-edge-1"}, charts, "only edge-1's bootstrap chart changes")

	// The plan names each release's dependencies by key.
	code, stdout, stderr = solar(t, "render", "--no-credentials", "-o", "json", "--out", filepath.Join(dir, "out2"), examples)
	require.Equal(t, 0, code, stderr)
	var r pipeline.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &r), stdout)
	deps := map[string][]string{}
	for _, tr := range r.Targets {
		for _, rel := range tr.Releases {
			if len(rel.DependsOn) > 0 {
				deps[tr.Namespace+"/"+tr.Name+" "+rel.Key] = rel.DependsOn
			}
		}
	}
	assert.Equal(t, map[string][]string{"alpha/edge-1 podinfo": {"metrics"}}, deps)
}
