package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/status"
)

// targetNames are the namespace/name of the Targets of a report.
func targetNames(r pipeline.Report) []string {
	names := []string{}
	for _, tr := range r.Targets {
		names = append(names, tr.Namespace+"/"+tr.Name)
	}
	return names
}

// TestSelectorRender: -l keeps the Targets whose labels match, in kubectl's
// selector syntax, with -n and --target.
func TestSelectorRender(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-l", "env=prod"}, []string{"alpha/edge-1"}},
		{[]string{"--selector", "env!=prod"}, []string{"alpha/edge-2", "beta/plant-1", "beta/plant-2"}},
		{[]string{"-l", "env in (prod,staging)"}, []string{"alpha/edge-1", "alpha/edge-2"}},
		{[]string{"-l", "site notin (north)"}, []string{"alpha/edge-1", "alpha/edge-2", "beta/plant-2"}},
		{[]string{"-l", "!env"}, []string{"beta/plant-1", "beta/plant-2"}},
		{[]string{"-l", "tier,site=south"}, []string{"beta/plant-2"}},
		{[]string{"-n", "alpha", "-l", "region=eu"}, []string{"alpha/edge-1", "alpha/edge-2"}},
		{[]string{"--target", "edge-2", "-l", "region=eu"}, []string{"alpha/edge-2"}},
		{[]string{"-A", "-l", "tier=device"}, []string{"beta/plant-1", "beta/plant-2"}},
	} {
		args := append([]string{"render", "--no-credentials", "--dry-run", "-o", "json", "--out", out}, tc.args...)
		code, stdout, stderr := solar(t, append(args, "../../examples")...)
		require.Equal(t, 0, code, "%v: %s", tc.args, stderr)
		assert.Equal(t, tc.want, targetNames(decodeReport(t, stdout)), "%v", tc.args)
	}
	assert.NoDirExists(t, out, "dry runs")
}

// TestSelectorRefused: an invalid selector, a selector that matches no
// Target, -A with -n and -l with --prune each fail (exit 1) on render,
// publish, diff and status, saying why, before anything is written or any
// registry is asked.
func TestSelectorRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600))
	// A registry nobody listens on: publish must fail before it is asked.
	nobody := "127.0.0.1:1/solar"
	commands := map[string][]string{
		"render":  {"render", "--no-credentials", "--out", out},
		"publish": {"publish", "--no-credentials", "--plain-http", "--registry", nobody},
		"diff":    {"diff", "--files", "--no-credentials", "--out", out},
		"status":  {"status", "--kubeconfig", kubeconfig, "--out", out},
	}
	for _, tc := range []struct {
		args    []string
		stderr  string
		skipFor string
	}{
		{[]string{"-l", "env in (prod"}, `solar: invalid -l/--selector "env in (prod":`, ""},
		{[]string{"-l", "env==prod=x"}, `solar: invalid -l/--selector "env==prod=x":`, ""},
		{[]string{"-A", "-n", "alpha"}, "solar: -A and -n: choose one\n", ""},
		{[]string{"--all-namespaces", "-l", "env=prod", "--namespace", "beta"}, "solar: -A and -n: choose one\n", ""},
		{[]string{"-l", "tier=device", "--prune"}, "solar: --prune with -l: a Target no longer in the input has no labels left to match", "status"},
	} {
		for name, cmd := range commands {
			if name == tc.skipFor {
				continue
			}
			code, stdout, stderr := solar(t, append(append(cmd, tc.args...), "../../examples")...)
			assert.Equal(t, 1, code, "%s %v", name, tc.args)
			assert.Empty(t, stdout, "%s %v", name, tc.args)
			assert.Contains(t, stderr, tc.stderr, "%s %v", name, tc.args)
			assert.NotContains(t, stderr, "127.0.0.1:1", "%s %v: the registry is not asked", name, tc.args)
		}
	}
	assert.NoDirExists(t, out, "nothing written")

	// A selector that matches no Target says so, as -n and --target do.
	for name, cmd := range commands {
		if name == "publish" || name == "status" {
			continue // they need a registry, a layout: below
		}
		code, _, stderr := solar(t, append(cmd, "-n", "beta", "-l", "env=prod", "../../examples")...)
		assert.Equal(t, 1, code, name)
		assert.Contains(t, stderr, "no Target matches -n beta -l env=prod", name)
	}
	assert.NoDirExists(t, out, "nothing written")
	require.NoError(t, os.Mkdir(out, 0o755))
	code, stdout, stderr := solar(t, append(commands["status"], "-l", "env=nope", "../../examples")...)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "solar: no Target matches -l env=nope: nothing to show\n", stderr)
}

// TestSelectorLeavesNoOrphans: a Target the selector leaves out is in the
// input all the same: a run with -l lists no orphan and writes nothing for
// it, and, since a Target gone from the input has no labels to match, does
// not list that one either (a run without -l does); --prune with -l is
// refused and writes nothing.
func TestSelectorLeavesNoOrphans(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	out := filepath.Join(dir, "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	testenv.RemovePlant2(t, examples)
	before := countFiles(t, out)

	for _, sel := range []string{"env=prod", "tier=device", "site=north,tier=device"} {
		code, stdout, stderr := solar(t, "render", "--no-credentials", "-o", "json", "-l", sel, "--out", out, examples)
		require.Equal(t, 0, code, stderr)
		r := decodeReport(t, stdout)
		assert.NotEmpty(t, r.Targets, sel)
		assert.Empty(t, r.Orphans, "-l %s: edge-2 (or edge-1, plant-1) is in the input; plant-2's labels are not known", sel)
		for _, tr := range r.Targets {
			assert.Equal(t, "unchanged", tr.Action, "%s/%s", tr.Namespace, tr.Name)
		}
		code, stdout, stderr = solar(t, "diff", "--no-credentials", "-l", sel, "--out", out, examples)
		require.Equal(t, 0, code, stderr)
		assert.NotContains(t, stdout, "orphan", sel)

		code, _, stderr = solar(t, "render", "--no-credentials", "--prune", "-l", sel, "--out", out, examples)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "--prune with -l")
	}
	assert.Equal(t, before, countFiles(t, out), "nothing written")

	// The same input without -l: plant-2, and only plant-2, is an orphan.
	code, stdout, stderr := solar(t, "diff", "--no-credentials", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 1, strings.Count(stdout, "# orphan:"), stdout)
	assert.Contains(t, stdout, "# orphan: beta/bootstrap-plant-2:")
}

// TestSelectorStatus: status shows the Targets -l selects; -A is every
// namespace, as without -n.
func TestSelectorStatus(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	// Nothing of alpha is published: status asks no API server for it.
	code, _, stderr := solar(t, "render", "--no-credentials", "-n", "beta", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: x}}]
current-context: c
`), 0o600))
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-l", "env"}, []string{"alpha/edge-1", "alpha/edge-2"}},
		{[]string{"-A", "-l", "env=staging"}, []string{"alpha/edge-2"}},
		{[]string{"-n", "alpha", "-l", "env!=staging"}, []string{"alpha/edge-1"}},
	} {
		args := append([]string{"status", "--kubeconfig", kubeconfig, "--out", out, "-o", "json"}, tc.args...)
		code, stdout, stderr := solar(t, append(args, "../../examples")...)
		require.Equal(t, 0, code, "%v: %s", tc.args, stderr)
		var doc struct{ Targets []status.Target }
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
		var got []string
		for _, s := range doc.Targets {
			got = append(got, s.Namespace+"/"+s.Name)
			assert.Equal(t, status.Unknown, s.State, "nothing published for it")
		}
		assert.Equal(t, tc.want, got, "%v", tc.args)
	}
}

// TestAllNamespaces: -A is what omitting -n is: the same Targets, the same
// output, on render and diff.
func TestAllNamespaces(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	for _, cmd := range [][]string{
		{"render", "--no-credentials", "--dry-run", "-o", "json", "--out", out},
		{"diff", "--files", "--no-credentials", "--out", out},
	} {
		code, want, stderr := solar(t, append(cmd, "../../examples")...)
		require.Equal(t, 0, code, stderr)
		code, got, stderr := solar(t, append(cmd, "-A", "../../examples")...)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, want, got, cmd[0])
		assert.Contains(t, got, "beta/bootstrap-plant-2", cmd[0])
		assert.Contains(t, got, "alpha/bootstrap-edge-1", cmd[0])
	}
}

// TestSelectorPublish: publish -l pushes the charts of the Targets it
// selects only; with --prune it is refused before anything is pushed.
func TestSelectorPublish(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	pub := func(args ...string) (int, pipeline.Report, string) {
		t.Helper()
		proxy.Take()
		code, stdout, stderr := publishCLI(t, reg, reg.Password, append([]string{"--no-credentials", "--plain-http", "--registry", proxy.Host + "/solar", "-o", "json"}, args...)...)
		var r pipeline.Report
		if code == 0 {
			r = decodeReport(t, stdout)
		}
		return code, r, stderr
	}
	code, _, stderr := pub("-l", "site=south", "--prune", "../../examples")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--prune with -l")
	assert.Zero(t, countproxy.Writes(proxy.Take()), "nothing is published")

	code, r, stderr := pub("-l", "site=south", "../../examples")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"beta/plant-2"}, targetNames(r))
	assert.Equal(t, "create", r.Targets[0].Action)

	proxy.Take()
	code, stdout, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", proxy.Host+"/solar", "-l", "site=east", "../../examples")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "no Target matches -l site=east")
	assert.Zero(t, countproxy.Writes(proxy.Take()), "nothing is published")

	// The rest: plant-2 unchanged was not asked for, the others are new.
	code, r, stderr = pub("-A", "../../examples")
	require.Equal(t, 0, code, stderr)
	for _, tr := range r.Targets {
		want := "create"
		if tr.Name == "plant-2" {
			want = "unchanged"
		}
		assert.Equal(t, want, tr.Action, tr.Name)
	}
	assert.Empty(t, r.Orphans)
}
