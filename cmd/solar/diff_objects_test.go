package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// podinfoChart is a stand-in of the podinfo chart the examples install: a
// Deployment of .Values.replicaCount replicas, named after the release.
var podinfoChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: podinfo\nversion: 6.7.0\n",
	"values.yaml": "replicaCount: 1\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:6.7.0
`,
}

// pushPodinfo packs podinfoChart with the real helm CLI and pushes it to a
// registry that serves pulls anonymously, as ghcr.io does.
func pushPodinfo(t *testing.T, host string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range podinfoChart {
		p := filepath.Join(dir, "podinfo", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	helm := testenv.Tool(t, "helm")
	for _, args := range [][]string{
		{"package", filepath.Join(dir, "podinfo"), "-d", dir},
		{"push", filepath.Join(dir, "podinfo-6.7.0.tgz"), "oci://" + host + "/stefanprodan/charts", "--plain-http"},
	} {
		cmd := exec.Command(helm, args...)
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+dir, "HELM_CACHE_HOME="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "helm %v: %s", args, out)
	}
}

// TestDiffObjectsNameTheDeployment: after a values change on examples/, the
// object-level diff renders the chain down to the application chart (from
// its registry) and names the Deployment and the field; --files keeps the
// chart files' view.
func TestDiffObjectsNameTheDeployment(t *testing.T) {
	source := testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true})
	pushPodinfo(t, source.Host)
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	// The examples' source registry (ghcr.io) is this one.
	pointExamples(t, examples, source.Host)
	out := filepath.Join(dir, "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	changeRelease(t, examples, "2", "3")

	code, stdout, stderr := solar(t, "diff", "--no-credentials", "--exit-code", "--out", out, examples)
	require.Equal(t, 2, code, stderr)
	assert.Contains(t, stdout, "# update Deployment podinfo/podinfo-edge-1-podinfo (level 3) on alpha/edge-1\n")
	assert.Contains(t, stdout, "-  replicas: 2\n+  replicas: 3\n")
	assert.Contains(t, stdout, "# update HelmRelease flux-system/edge-1-podinfo (level 2) on alpha/edge-1\n")
	assert.Contains(t, stderr, "2 charts, 3 objects, 1 Target would change")
	assert.NotContains(t, stdout, "values.yaml", "objects, not files")

	code, stdout, stderr = solar(t, "diff", "--no-credentials", "-o", "json", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	var d pipeline.DiffReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &d))
	var kinds []string
	for _, o := range d.Objects {
		kinds = append(kinds, o.Action+" "+o.Object.String())
	}
	assert.Equal(t, []string{
		"update OCIRepository flux-system/solar-bootstrap-podinfo",
		"update HelmRelease flux-system/edge-1-podinfo",
		"update Deployment podinfo/podinfo-edge-1-podinfo",
	}, kinds)

	code, stdout, stderr = solar(t, "diff", "--files", "--no-credentials", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "# alpha/alpha/release-podinfo-stable 0.0.1 -> 0.0.2, reaches alpha/edge-1\n")
	assert.NotContains(t, stdout, "Deployment")
	assert.Contains(t, stderr, "2 charts, 1 Target would change")
}

// TestDiffObjectsPerRenderRegistry: with --out, each Target's chain is read
// against the registry its own bootstrap chart names: beta's Targets render
// to a second registry, and the change of beta's Release still shows at
// level 2 (it vanished when one registry stood for every Target).
func TestDiffObjectsPerRenderRegistry(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	edit := func(file, old, new string) {
		t.Helper()
		p := filepath.Join(examples, file)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(b), old)
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), old, new, -1)), 0o644))
	}
	p := filepath.Join(examples, "shared", "registries.yaml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	second := "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Registry\nmetadata:\n  name: render2\n  namespace: shared\nspec:\n  hostname: registry2.example.com\n  targetPullSecretName: render-pull\n"
	require.NoError(t, os.WriteFile(p, append(b, second...), 0o644))
	edit("shared/pipeline.yaml", "      - registry.example.com\n", "      - registry.example.com\n      - registry2.example.com\n")
	edit("beta/targets.yaml", "        name: render\n", "        name: render2\n")
	edit("beta/releases.yaml", "  targetNamespace: podinfo\n", "  targetNamespace: podinfo\n  values:\n    replicaCount: 2\n")
	out := filepath.Join(dir, "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	edit("beta/releases.yaml", "replicaCount: 2", "replicaCount: 5")

	code, stdout, stderr := solar(t, "diff", "--no-app-charts", "--no-credentials", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "# update HelmRelease flux-system/plant-1-podinfo (level 2) on beta/plant-1, beta/plant-2 (HelmRelease flux-system/plant-2-podinfo)\n")
	assert.Contains(t, stdout, "-    replicaCount: 2\n+    replicaCount: 5\n")
	assert.NotContains(t, stderr, "registry2.example.com", "no note of a chart not read: the store has it")
}
