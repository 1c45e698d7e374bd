package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/txtar"

	"github.com/solar-pipeline/solar/renderer/diag"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/vet/*.txtar")

// solar runs the CLI in process and returns its exit code, stdout and stderr.
func solar(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// extract writes the files of an archive (all but "want") into a new directory
// and returns it.
func extract(t *testing.T, ar *txtar.Archive) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range ar.Files {
		if f.Name == "want" {
			continue
		}
		p := filepath.Join(dir, f.Name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.Data, 0o644))
	}
	return dir
}

func want(ar *txtar.Archive) string {
	for _, f := range ar.Files {
		if f.Name == "want" {
			return string(f.Data)
		}
	}
	return ""
}

// TestVetBadInput runs solar vet on every case of the bad-input corpus: each must
// exit 1 and print exactly its golden lines, paths relative to the case.
func TestVetBadInput(t *testing.T) {
	cases, err := filepath.Glob("testdata/vet/*.txtar")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cases), 30, "the corpus should hold at least 30 cases")
	for _, c := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(c), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(c)
			require.NoError(t, err)
			dir := extract(t, ar)
			t.Chdir(dir)
			code, stdout, stderr := solar(t, "vet", ".")
			if *update {
				for i := range ar.Files {
					if ar.Files[i].Name == "want" {
						ar.Files[i].Data = []byte(stdout)
					}
				}
				require.NoError(t, os.WriteFile(filepath.Join(origDir, c), txtar.Format(ar), 0o644))
				return
			}
			assert.Equal(t, 1, code, "exit code; stderr:\n%s", stderr)
			assert.Equal(t, want(ar), stdout)
			assert.NotEmpty(t, stdout, "a bad input must print at least one problem")
		})
	}
}

var origDir, _ = os.Getwd()

func TestVetExamples(t *testing.T) {
	code, stdout, stderr := solar(t, "vet", "../../examples")
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		assert.Contains(t, line, "warning:", "examples/ must have no errors")
	}
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
	_, stdout, _ := solar(t, "vet", "-n", "staging", dir)
	assert.Contains(t, stdout, "Registry staging/r")
}

func TestUsageErrors(t *testing.T) {
	code, _, stderr := solar(t, "vet")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "requires at least 1 arg")

	code, _, stderr = solar(t, "vet", "-o", "yaml", ".")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `invalid --output "yaml"`)

	code, stdout, stderr := solar(t, "vet", "does-not-exist")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, "does-not-exist: stat does-not-exist: no such file or directory")
}
