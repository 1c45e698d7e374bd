package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// setBetaValues gives Release beta/podinfo the values replicaCount: n in a
// copy of examples/.
func setBetaValues(t *testing.T, examples string, n int) {
	t.Helper()
	p := filepath.Join(examples, "beta", "releases.yaml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(b)
	if i := strings.Index(s, "  values: {replicaCount: "); i >= 0 {
		s = s[:i] + s[i+strings.Index(s[i:], "}\n")+2:]
	}
	s = strings.Replace(s, "  targetNamespace: podinfo\n", fmt.Sprintf("  targetNamespace: podinfo\n  values: {replicaCount: %d}\n", n), 1)
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

// storeCLI runs solar against one store: write is the command that writes
// to it (render for a layout, publish for a registry), flags name it.
type storeCLI struct {
	write string
	flags []string
	run   func(args ...string) (int, string, string)
	reg   *testenv.Registry // the registry, or nil
}

func (c storeCLI) do(t *testing.T, cmd string, args ...string) (int, string, string) {
	t.Helper()
	return c.run(append(append([]string{cmd}, c.flags...), args...)...)
}

func layoutCLI(t *testing.T) storeCLI {
	return storeCLI{write: "render", flags: []string{"--out", filepath.Join(t.TempDir(), "out")},
		run: func(args ...string) (int, string, string) { return solar(t, args...) }}
}

func registryCLI(t *testing.T, opts testenv.RegistryOptions) storeCLI {
	reg := testenv.StartRegistry(t, opts)
	return storeCLI{write: "publish", flags: []string{"--registry", reg.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"},
		run: func(args ...string) (int, string, string) { return fleetCLI(t, reg, args...) }, reg: reg}
}

// gcMarkScenario writes namespace beta of examples/ into a store, then
// changes the values of Release beta/podinfo three times, each time writing
// plant-1 only: plant-2's only bootstrap version still names
// release-podinfo 0.0.1, which is beyond --keep 3.
func gcMarkScenario(t *testing.T, c storeCLI) {
	t.Helper()
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	code, _, stderr := c.do(t, c.write, "--no-credentials", "-n", "beta", examples)
	require.Equal(t, 0, code, stderr)
	for n := 2; n <= 4; n++ {
		setBetaValues(t, examples, n)
		code, _, stderr := c.do(t, c.write, "--no-credentials", "-n", "beta", "--target", "plant-1", examples)
		require.Equal(t, 0, code, stderr)
	}
}

// checkGCMark runs the collection of the scenario and checks that what
// plant-2 installs stays, and that the dry run says why.
func checkGCMark(t *testing.T, c storeCLI) {
	t.Helper()
	code, stdout, stderr := c.do(t, "gc", "--keep", "3", "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "would remove beta/bootstrap-plant-1:0.0.1\n")
	assert.NotContains(t, stdout, "would remove beta/beta/release-podinfo:0.0.1\n")
	assert.Contains(t, stdout, "would keep beta/beta/release-podinfo:0.0.1, older than --keep 3: beta/bootstrap-plant-2:0.0.1 names it\n")
	code, stdout, stderr = c.do(t, "gc", "--keep", "3", "-o", "json", "--dry-run")
	require.Equal(t, 0, code, stderr)
	var res struct {
		Held []struct {
			Version string
			By      []string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Held, 1, stdout)
	assert.Equal(t, "beta/beta/release-podinfo:0.0.1", res.Held[0].Version)
	assert.Equal(t, []string{"beta/bootstrap-plant-2:0.0.1"}, res.Held[0].By)

	code, stdout, stderr = c.do(t, "gc", "--keep", "3")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "removed beta/bootstrap-plant-1:0.0.1\n")
	assert.Contains(t, stdout, "kept beta/beta/release-podinfo:0.0.1, older than --keep 3: beta/bootstrap-plant-2:0.0.1 names it\n")
	code, stdout, stderr = c.do(t, "verify")
	assert.Equal(t, 0, code, "verify after gc: %s%s", stdout, stderr)
}

// gc marks from every bootstrap version it keeps: a Target not rendered
// since (here plant-2) keeps the release chart versions it names.
func TestGCKeepsWhatKeptBootstrapsName(t *testing.T) {
	c := layoutCLI(t)
	gcMarkScenario(t, c)
	checkGCMark(t, c)
}

func TestGCKeepsWhatKeptBootstrapsNameInARegistry(t *testing.T) {
	needRegistry(t)
	c := registryCLI(t, testenv.RegistryOptions{})
	gcMarkScenario(t, c)
	checkGCMark(t, c)
}
