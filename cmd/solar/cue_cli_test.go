package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/txtar"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// cueVet runs the README's command, cue vet -c -d '#Object' schemas/*.cue FILES,
// with the real cue CLI from scripts/install-tools.sh.
func cueVet(t *testing.T, files ...string) (int, string) {
	t.Helper()
	cue := testenv.Tool(t, "cue")
	schemas, err := filepath.Glob("../../schemas/*.cue")
	require.NoError(t, err)
	require.NotEmpty(t, schemas)
	args := append([]string{"vet", "-c", "-d", "#Object"}, schemas...)
	out, err := exec.Command(cue, append(args, files...)...).CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

// TestCueCLIAcceptsExamples: examples/, the SolAr-format tree and the
// Rollout of testdata/rollouts pass plain cue vet.
func TestCueCLIAcceptsExamples(t *testing.T) {
	for _, dir := range []string{"../../examples", solarFormat, rollouts} {
		var files []string
		require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "ci" {
				return filepath.SkipDir // a CI workflow, no SolAr objects
			}
			if err == nil && !d.IsDir() && filepath.Ext(p) == ".yaml" {
				files = append(files, p)
			}
			return err
		}))
		code, out := cueVet(t, files...)
		assert.Equal(t, 0, code, "%s: %s", dir, out)
	}
}

// TestCueCLIRejectsSchemaErrors: the cases of the corpus that break a schema
// (not a reference or a policy, which only solar vet checks) fail plain cue vet too.
func TestCueCLIRejectsSchemaErrors(t *testing.T) {
	for _, name := range []string{
		"bad-label-value", "chart-bad-digest", "chart-repository-scheme", "chart-tag-and-digest",
		"componentversion-incomplete", "invalid-name", "invalid-namespace", "missing-name",
		"missing-spec", "pipelineconfig-invalid", "priority-out-of-range", "priority-wrong-type",
		"registry-hostname-scheme", "release-both-sources", "release-no-source",
		"selector-bad-label-key", "selector-bad-operator", "selector-exists-with-values",
		"selector-in-without-values", "target-name-too-long", "unknown-kind",
		"unknown-spec-field", "unknown-top-field", "userdata-not-object", "wrong-apiversion",
		"empty-reference", "field-typo", "grant-invalid-entry", "unquoted-version",
		"rollout-percent-out-of-range",
	} {
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(filepath.Join("testdata/vet", name+".txtar"))
			require.NoError(t, err)
			dir := t.TempDir()
			require.True(t, writeInputs(t, ar, dir))
			files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
			require.NoError(t, err)
			code, out := cueVet(t, files...)
			assert.Equal(t, 1, code, "cue vet should reject %s:\n%s", name, out)
		})
	}
}
