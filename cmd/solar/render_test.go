package main

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"

	// The subprocesses below run in other time zones; they must not depend on
	// the machine having zoneinfo.
	_ "time/tzdata"
)

// TestMain lets a test run this binary as the solar CLI: with
// SOLAR_TEST_MAIN=1 it is main.
func TestMain(m *testing.M) {
	if os.Getenv("SOLAR_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

func decodeReport(t *testing.T, out string) pipeline.Report {
	t.Helper()
	var r pipeline.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// digests maps every chart repository of a report to version and digest.
func digests(r pipeline.Report) map[string]string {
	out := map[string]string{}
	for _, t := range r.Targets {
		out[t.Repository] = t.Version + " " + t.Digest
		for _, rel := range t.Releases {
			out[rel.Repository] = rel.Version + " " + rel.Digest
		}
	}
	return out
}

// TestRenderIsReproducible renders examples/ in two processes with different
// time zones, working directories and output directories: every digest is the
// same, and equal to the golden ones (testdata/render/digests.json) that catch
// accidental drift. Run with -update to accept a deliberate change.
func TestRenderIsReproducible(t *testing.T) {
	var got []map[string]string
	var layouts []map[string]ocispec.Index
	for _, tz := range []string{"UTC", "Pacific/Chatham"} {
		dir := t.TempDir()
		testenv.CopyExamples(t, dir)
		cmd := exec.Command(os.Args[0], "render", "--no-credentials", "-o", "json", "--out", filepath.Join(dir, "layout"), "examples")
		cmd.Dir = dir
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool {
			return strings.HasPrefix(e, "SOURCE_DATE_EPOCH=") || strings.HasPrefix(e, "TZ=")
		}), "SOLAR_TEST_MAIN=1", "TZ="+tz)
		out, err := cmd.Output()
		require.NoError(t, err)
		got = append(got, digests(decodeReport(t, string(out))))
		layouts = append(layouts, testenv.LayoutIndexes(t, filepath.Join(dir, "layout")))
	}
	assert.Equal(t, got[0], got[1])
	assert.Len(t, layouts[0], 12, "one OCI layout per repository: 10 charts, 2 namespace indexes")
	assert.Equal(t, layouts[0], layouts[1], "the whole layout is reproducible, every index.json included")

	golden := "testdata/render/digests.json"
	if *update {
		b, err := json.MarshalIndent(got[0], "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(golden, append(b, '\n'), 0o644))
	}
	b, err := os.ReadFile(golden)
	require.NoError(t, err)
	var want map[string]string
	require.NoError(t, json.Unmarshal(b, &want))
	assert.Equal(t, want, got[0], "digests drifted from %s: if on purpose, run go test ./cmd/solar -run TestRenderIsReproducible -update", golden)
}

func TestRenderTwiceIsUnchanged(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := solar(t, "render", "--no-credentials", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "create")
	assert.NotContains(t, stdout, "unchanged")

	code, stdout, stderr = solar(t, "render", "--no-credentials", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		if strings.Contains(line, "excluded") || strings.Contains(line, "warning") {
			continue
		}
		assert.True(t, strings.HasSuffix(line, "unchanged"), line)
	}
}

func TestRenderJSONContract(t *testing.T) {
	code, stdout, stderr := solar(t, "render", "--no-credentials", "--dry-run", "-o", "json", "--out", filepath.Join(t.TempDir(), "out"), "../../examples")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Targets  []map[string]json.RawMessage `json:"targets"`
		Problems []map[string]any             `json:"problems"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Len(t, doc.Targets, 4)
	keys := func(m map[string]json.RawMessage) []string { return slices.Sorted(maps.Keys(m)) }
	edge2 := doc.Targets[1]
	assert.Equal(t, []string{"action", "digest", "excluded", "name", "namespace", "releases", "repository", "version"}, keys(edge2))
	assert.JSONEq(t, `"alpha/bootstrap-edge-2"`, string(edge2["repository"]))
	assert.JSONEq(t, `"create"`, string(edge2["action"]))

	var releases []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(edge2["releases"], &releases))
	assert.Equal(t, []string{"action", "digest", "key", "release", "repository", "version"}, keys(releases[0]))
	assert.JSONEq(t, `"podinfo"`, string(releases[0]["key"]))
	assert.JSONEq(t, `"alpha/podinfo-canary"`, string(releases[0]["release"]))
	assert.JSONEq(t, `"0.0.1"`, string(releases[0]["version"]))

	assert.JSONEq(t, `[
		{"release": "alpha/podinfo-stable", "reason": "uniqueName \"podinfo\" is taken by alpha/podinfo-canary (priority 20, this release has 10)"},
		{"release": "alpha/metrics", "reason": "antiAffinity matches the labels of alpha/podinfo-canary, taken before it"}
	]`, string(edge2["excluded"]))
	require.Len(t, doc.Problems, 3, "the shared-agent warning, and --no-credentials for edge-1 and edge-2")
	for _, p := range doc.Problems {
		assert.Equal(t, "warning", p["severity"])
	}
	assert.Contains(t, doc.Problems[0]["message"], "Target alpha/edge-1: its agent gets no token (--no-credentials), so it cannot report to the SolAr API server until a run with --kubeconfig mints one")
	assert.NotContains(t, doc.Problems[0]["message"], "or --no-credentials", "the warning of --no-credentials never asks for --no-credentials")

	// Without --no-credentials and without --kubeconfig, the alpha Targets
	// keep their previous bootstrap charts and the run fails.
	code, stdout, _ = solar(t, "render", "--dry-run", "-o", "json", "--out", filepath.Join(t.TempDir(), "out"), "../../examples")
	assert.Equal(t, 1, code)
	r := decodeReport(t, stdout)
	var names []string
	for _, tr := range r.Targets {
		names = append(names, tr.Namespace+"/"+tr.Name)
	}
	assert.Equal(t, []string{"beta/plant-1", "beta/plant-2"}, names)
	assert.Contains(t, stdout, "Target alpha/edge-2: its agent credential is not issued (unknown: pass --kubeconfig of the SolAr API server, or --no-credentials); the Target keeps its previous bootstrap chart")
}

func TestRenderSelectsTargets(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := solar(t, "render", "--no-credentials", "-n", "beta", "-o", "json", "--out", filepath.Join(dir, "out"), "../../examples")
	require.Equal(t, 0, code, stderr)
	var names []string
	for _, tr := range decodeReport(t, stdout).Targets {
		names = append(names, tr.Namespace+"/"+tr.Name)
	}
	assert.Equal(t, []string{"beta/plant-1", "beta/plant-2"}, names)

	code, stdout, stderr = solar(t, "render", "--no-credentials", "--target", "edge-1", "-o", "json", "--out", filepath.Join(dir, "out"), "../../examples")
	require.Equal(t, 0, code, stderr)
	require.Len(t, decodeReport(t, stdout).Targets, 1)

	code, stdout, stderr = solar(t, "render", "--no-credentials", "-n", "beta", "--target", "edge-1", "--out", filepath.Join(dir, "out"), "../../examples")
	assert.Equal(t, 1, code)
	assert.NotContains(t, stdout, "no Target matches")
	assert.Contains(t, stderr, "no Target matches -n beta --target edge-1")
}

func TestRenderInvalidInputWritesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "examples", "bad.yaml"), []byte(`apiVersion: solar.opendefense.cloud/v1alpha1
kind: Release
metadata: {name: Bad_Name, namespace: alpha}
spec: {chart: {repository: ghcr.io/x/y, tag: "1"}}
`), 0o644))
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, filepath.Join(dir, "examples"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "bad.yaml:3:12: metadata.name:")
	assert.NoDirExists(t, out, "invalid input writes nothing")
}

// TestRenderFailedTargetOthersRender: a Target that does not resolve is
// reported and skipped, the others are rendered, and the exit code is 1.
func TestRenderFailedTargetOthersRender(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	// A second pull secret for ghcr.io on edge-1.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "examples", "conflict.yaml"), []byte(`apiVersion: solar.opendefense.cloud/v1alpha1
kind: Registry
metadata: {name: ghcr-other, namespace: alpha}
spec: {hostname: ghcr.io, targetPullSecretName: other-pull}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: RegistryBinding
metadata: {name: edge-1-other, namespace: alpha}
spec:
  targetRef: {name: edge-1}
  registryRef: {name: ghcr-other}
`), 0o644))
	out := filepath.Join(dir, "out")
	code, stdout, _ := solar(t, "render", "--no-credentials", "-o", "json", "--out", out, filepath.Join(dir, "examples"))
	assert.Equal(t, 1, code)
	r := decodeReport(t, stdout)
	var names []string
	for _, tr := range r.Targets {
		names = append(names, tr.Name)
	}
	assert.Equal(t, []string{"edge-2", "plant-1", "plant-2"}, names)
	var errs []string
	for _, p := range r.Problems {
		if p.Severity == "error" {
			errs = append(errs, p.String())
		}
	}
	assert.Equal(t, []string{filepath.Join(dir, "examples", "conflict.yaml") + `:11: spec.registryRef: Target alpha/edge-1 gets two pull secrets for ghcr.io: "ghcr-pull" from RegistryBinding alpha/edge-1-ghcr and "other-pull" from RegistryBinding alpha/edge-1-other`}, errs)
	assert.DirExists(t, out, "the other Targets are written")
}

func TestRenderSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	code, _, stderr := solar(t, "render", "--no-credentials", "--dry-run", "--out", filepath.Join(t.TempDir(), "out"), "../../examples")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `invalid SOURCE_DATE_EPOCH "yesterday"`)

	// SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) moves with every commit:
	// the created time is in the manifest, never in the chart's bytes, and a
	// new time alone is no change.
	out := filepath.Join(t.TempDir(), "out")
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	code, stdout, stderr := solar(t, "render", "--no-credentials", "-o", "json", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile("testdata/render/digests.json")
	require.NoError(t, err)
	var golden map[string]string
	require.NoError(t, json.Unmarshal(b, &golden))
	got := digests(decodeReport(t, stdout))
	assert.NotEqual(t, golden["alpha/bootstrap-edge-1"], got["alpha/bootstrap-edge-1"], "the created time is in the manifest")
	t.Setenv("SOURCE_DATE_EPOCH", "1800000000")
	code, stdout, stderr = solar(t, "render", "--no-credentials", "-o", "json", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	for _, tr := range decodeReport(t, stdout).Targets {
		assert.Equal(t, publish.Unchanged, tr.Action, "%s: a new time alone is no change", tr.Name)
	}
}

// TestReadmePlanIsCurrent: the example plan in the README is what render
// prints for examples/ today.
func TestReadmePlanIsCurrent(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, block, found := strings.Cut(string(readme), "```\nTARGET ")
	require.True(t, found, "the README shows a plan")
	block, _, _ = strings.Cut("TARGET "+block, "```")
	code, stdout, stderr := solar(t, "render", "--no-credentials", "--out", filepath.Join(t.TempDir(), "out"), "../../examples")
	require.Equal(t, 0, code, stderr)
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		assert.Contains(t, stdout, line+"\n", "README.md's plan is stale: paste what `bin/solar render --no-credentials --out NEW examples/` prints")
	}
}
