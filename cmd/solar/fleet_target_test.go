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
)

// TestFleetApplyIgnoresClusterTargets: fleet apply resolves the fleet's
// kinds alone: a cluster Target whose release's valuesTemplate fails to
// render (solar vet says so) does not block a DeviceUpgrade beside it.
func TestFleetApplyIgnoresClusterTargets(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	nats := testenv.StartNATS(t)
	login := []string{"--registry", reg.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	code, _, stderr := fleetCLI(t, reg, append(append([]string{"fleet", "push-agent", "--repository", "fleet/agent", "--version", "1.4.0"}, login...), agentFiles(t, "1.4.0")...)...)
	require.Equal(t, 0, code, stderr)

	tree := filepath.Join(t.TempDir(), "tree")
	fleetTree(t, tree, "1.4.0")
	root := testenv.Root(t)
	for _, dir := range []string{"shared", "alpha"} {
		files, err := filepath.Glob(filepath.Join(root, "examples", dir, "*.yaml"))
		require.NoError(t, err)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			s := strings.ReplaceAll(string(b), "{{ .Target.Name }}", "{{ .Target.Userdata.missing }}")
			require.NoError(t, os.WriteFile(filepath.Join(tree, dir+"-"+filepath.Base(f)), []byte(s), 0o644))
		}
	}
	code, _, stderr = fleetCLI(t, reg, "vet", "--cache-dir", "", tree)
	require.Equal(t, 1, code, "the Targets' valuesTemplate is broken: %s", stderr)
	require.Contains(t, stderr, "valuesTemplate")

	code, stdout, stderr := fleetCLI(t, reg, append([]string{"fleet", "apply", "-o", "json", "--cache-dir", "", "--nats", nats.URL, tree}, login...)...)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	var a applied
	require.NoError(t, json.Unmarshal([]byte(stdout), &a), stdout)
	require.Len(t, a.Devices, 2)
	for _, r := range a.Devices {
		assert.Equal(t, "create", r.Action, r.DeviceID)
	}
}
