package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/diag"
)

// solar runs the CLI in process and returns its exit code, stdout and stderr.
func solar(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestVetBadInput runs every case of the bad-input corpus, testdata/vet/*.txtar
// (the golden format, golden_test.go): each prints exactly its problems on
// stderr and, where the command has a result, that on stdout.
func TestVetBadInput(t *testing.T) {
	cases, err := filepath.Glob("testdata/vet/*.txtar")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cases), 30, "the corpus should hold at least 30 cases")
	for _, c := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(c), ".txtar"), func(t *testing.T) {
			assert.NotEmpty(t, golden(t, c), "a bad input must print at least one problem")
		})
	}
}

func TestVetExamples(t *testing.T) {
	code, stdout, stderr := solar(t, "vet", "../../examples")
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Empty(t, stdout)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, line := range lines[:len(lines)-1] {
		assert.Contains(t, line, "warning:", "examples/ must have no errors")
	}
	assert.Regexp(t, `^\d+ objects valid, \d+ warnings?$`, lines[len(lines)-1], "a vet that passes says so, on stderr")
	code, stdout, stderr = solar(t, "vet", "-q", "../../examples")
	assert.Equal(t, 0, code)
	assert.Empty(t, stdout+stderr, "-q: errors only")
}

func TestVetJSON(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(`apiVersion: solar.opendefense.cloud/v1alpha1
kind: Profile
metadata: {name: p}
spec:
  releaseRef: {name: missing}
`), 0o644))
	code, stdout, _ := solar(t, "vet", "-o", "json", dir)
	assert.Equal(t, 1, code)
	var got struct {
		Targets  []any     `json:"targets"`
		Problems diag.List `json:"problems"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	assert.NotNil(t, got.Targets)
	assert.Equal(t, diag.List{{
		File: filepath.Join(dir, "a.yaml"), Line: 5, Path: "spec.releaseRef",
		Message: "refers to a missing Release default/missing: NotFound", Severity: diag.Error,
	}}, got.Problems)

	code, stdout, _ = solar(t, "vet", "-o", "json", "../../examples")
	assert.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	for _, p := range got.Problems {
		assert.Equal(t, diag.Warning, p.Severity, "examples/ must have no errors: %v", p)
	}
}

func TestVetNamespaceFlag(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(`apiVersion: solar.opendefense.cloud/v1alpha1
kind: Target
metadata: {name: t}
spec:
  renderRegistryRef: {name: r}
`), 0o644))
	_, _, stderr := solar(t, "vet", "-n", "staging", dir)
	assert.Contains(t, stderr, "Registry staging/r")
}

func TestUsageErrors(t *testing.T) {
	code, _, stderr := solar(t, "vet")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "requires at least 1 arg")

	code, _, stderr = solar(t, "vet", "-o", "xml", ".")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `invalid --output "xml" for solar vet: want text, json or yaml`)

	code, _, stderr = solar(t, "vet", "-v", "-q", "../../examples")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--verbose and --quiet: choose one")

	// -o yaml wherever -o json: the same document.
	code, stdout, _ := solar(t, "vet", "-o", "yaml", "../../examples")
	assert.Equal(t, 0, code)
	var doc struct {
		Targets  []any `json:"targets"`
		Problems []any `json:"problems"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(stdout), &doc))
	assert.Len(t, doc.Problems, 1, "the shared-agent warning")

	code, stdout, _ = solar(t, "version", "-o", "json")
	assert.Equal(t, 0, code)
	var v map[string]string
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	assert.NotEmpty(t, v["version"])
	assert.Contains(t, v["goVersion"], "go1.")

	code, stdout, stderr = solar(t, "vet", "does-not-exist")
	assert.Equal(t, 1, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "does-not-exist: stat does-not-exist: no such file or directory")
}

// TestVetGitOpsTree: a repository holds much more than Solar objects; vet
// skips and counts what is not Solar's, and reads objects from stdin.
func TestVetGitOpsTree(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	files := map[string]string{
		// Flux objects beside ours: other API groups.
		"flux/podinfo.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo}\nspec: {interval: 5m}\n" +
			"---\napiVersion: v1\nkind: Namespace\nmetadata: {name: podinfo}\n",
		// A Helm chart folder, its template no YAML at all.
		"charts/app/Chart.yaml":             "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"charts/app/values.yaml":            "replicaCount: 1\n",
		"charts/app/templates/config.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
		"charts/app/templates/_helpers.tpl": "{{/* */}}",
		// A values file and a template outside any chart.
		"values.yaml":        "image: {tag: 1.0}\n",
		"kustomize/cm.yaml":  "{{- if .Values.x }}\nkind: ConfigMap\n{{- end }}\n",
		".github/ci.yaml":    "on: {push: {}}\njobs: {a: [\n",
		"ignored/bad.yaml":   "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata: {name: BAD}\n",
		"excluded/bad.yaml":  "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Widget\n",
		".solarignore":       "# a comment\nignored/\n",
		"crds/target.yaml":   "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: targets.solar.opendefense.cloud}\n",
		"examples/README.md": "not read",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	// An OCI layout solar rendered into out/.
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", filepath.Join(dir, "out"), filepath.Join(dir, "examples"))
	require.Equal(t, 0, code, stderr)

	code, stdout, stderr := solar(t, "vet", "-v", "--exclude", "excluded", dir)
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, "skipped 3 objects of other API groups (apiextensions.k8s.io 1, core 1, helm.toolkit.fluxcd.io 1)")
	assert.Contains(t, stderr, "4 files that hold no Kubernetes objects", "values.yaml, the template, the two workflows of examples/ci")
	assert.Contains(t, stderr, "2 Helm chart or OCI layout folders")

	// --strict: what was skipped is an error.
	code, _, stderr = solar(t, "vet", "--strict", "--exclude", "excluded", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, filepath.Join(dir, "flux/podinfo.yaml")+":1: apiVersion: an object of API group \"helm.toolkit.fluxcd.io\", not a Solar object (--strict)")

	// Without --exclude, the excluded folder's Widget is found.
	code, _, stderr = solar(t, "vet", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "excluded/bad.yaml")

	// Objects from stdin.
	b, err := os.ReadFile("../../examples/beta/targets.yaml")
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	code = run(context.Background(), []string{"vet", "-"}, bytes.NewReader(b), &out, &errOut)
	assert.Equal(t, 1, code, "the grant for the Targets' render Registry is elsewhere")
	assert.Contains(t, errOut.String(), "<stdin>:18: spec.renderRegistryRef: refers across namespaces without a grant: Registry shared/render")
}

// hasRow says whether text has a table row of exactly these cells (a
// tabwriter's columns, separated by spaces).
func hasRow(text string, cells ...string) bool {
	for _, line := range strings.Split(text, "\n") {
		if slices.Equal(strings.Fields(line), cells) {
			return true
		}
	}
	return false
}
