package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestOutputFormats: -o completes with, and takes, the formats of the
// command typed: name and wide where it prints a table, name where a list;
// text, json and yaml everywhere.
func TestOutputFormats(t *testing.T) {
	for cmd, want := range map[string]string{
		"render":              "text\njson\nyaml\nname\nwide\n",
		"publish":             "text\njson\nyaml\nname\nwide\n",
		"push":                "text\njson\nyaml\nname\nwide\n",
		"gc":                  "text\njson\nyaml\nname\n",
		"export":              "text\njson\nyaml\nname\n",
		"status":              "text\njson\nyaml\nname\n",
		"credentials sync":    "text\njson\nyaml\nname\n",
		"vet":                 "text\njson\nyaml\n",
		"verify":              "text\njson\nyaml\n",
		"diff":                "text\njson\nyaml\n",
		"version":             "text\njson\nyaml\n",
		"fleet status":        "text\njson\nyaml\nname\n",
		"fleet apply":         "text\njson\nyaml\nname\n",
		"bootstrap-manifests": "text\njson\nyaml\n",
	} {
		args := append([]string{"__complete"}, strings.Fields(cmd)...)
		_, stdout, _ := solar(t, append(args, "-o", "")...)
		assert.Equal(t, want+":4\n", stdout, cmd)
	}
	code, stdout, stderr := solar(t, "vet", "-o", "wide", "../../examples")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "solar: invalid --output \"wide\" for solar vet: want text, json or yaml\n", stderr)
}

// TestOutputName: -o name lists what a command's table lists, one name a
// line, each once, for scripts: REPOSITORY:VERSION for charts.
func TestOutputName(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples, out := filepath.Join(dir, "examples"), filepath.Join(dir, "out")
	code, stdout, stderr := solar(t, "render", "--no-credentials", "-o", "name", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, `alpha/bootstrap-edge-1:0.0.1
alpha/alpha/release-podinfo-stable:0.0.1
alpha/alpha/release-metrics:0.0.1
alpha/alpha/release-solar-agent:0.0.1
alpha/bootstrap-edge-2:0.0.1
alpha/alpha/release-podinfo-canary:0.0.1
beta/bootstrap-plant-1:0.0.1
beta/alpha/release-metrics:0.0.1
beta/beta/release-podinfo:0.0.1
beta/bootstrap-plant-2:0.0.1
`, stdout)
	assert.Contains(t, stderr, "4 Targets: 10 charts created", "the summary stays the conversation")

	// A no-op with --changed shows nothing: no row, no header, no name.
	for _, o := range []string{"text", "wide", "name"} {
		code, stdout, stderr = solar(t, "render", "--no-credentials", "--changed", "-o", o, "--out", out, examples)
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, stdout, o)
		assert.Contains(t, stderr, "4 unchanged Targets not shown (--changed)\n", o)
	}

	code, stdout, stderr = solar(t, "export", out, "--out", filepath.Join(dir, "site.tar"), "-o", "name")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 10, strings.Count(stdout, "\n"))
	assert.Contains(t, stdout, "beta/beta/release-podinfo:0.0.1\n")

	code, stdout, stderr = solar(t, "gc", "--out", out, "--keep", "1", "--dry-run", "-o", "name")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout, "nothing to remove")
	assert.Contains(t, stderr, "would remove 0 versions, 0 blobs")
}

// TestFleetStatusName: fleet status -o name prints the ids of the devices
// the bucket knows, one a line.
func TestFleetStatusName(t *testing.T) {
	ns, _, put := fleetBucket(t)
	put("attempt.dev-1", current("dev-1", "1.4.0"))
	put("state.dev-2", wire.DeviceState{State: "committed", Version: "1.4.0"})
	code, stdout, stderr := solar(t, "fleet", "status", "--nats", ns.URL, "-o", "name")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "dev-1\ndev-2\n", stdout)

	code, stdout, stderr = solar(t, "fleet", "status", "dev-9", "--nats", ns.URL, "-o", "name")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "not found in the bucket solar-fleet: dev-9 (1 of 1 device: ", "a count agrees with its number")
}

// TestKubeconfigRequiredInHelp: the help of a command that cannot do
// without --kubeconfig says so, and does not show it as optional.
func TestKubeconfigRequiredInHelp(t *testing.T) {
	for _, cmd := range [][]string{{"status"}, {"credentials", "sync"}} {
		code, stdout, _ := solar(t, append(cmd, "--help")...)
		require.Equal(t, 0, code)
		assert.NotContains(t, stdout, "[--kubeconfig", cmd)
		assert.Contains(t, stdout, " --kubeconfig FILE", cmd)
		assert.Regexp(t, `--kubeconfig FILE +the kubeconfig FILE of .*; required: this flag or \$KUBECONFIG`, stdout, cmd)
	}
}
