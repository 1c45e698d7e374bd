package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/diag"
)

// TestVetJSONPositions: -o json carries the positions and texts of the text
// output: line and column (where known) of a schema error, a YAML syntax
// error and a duplicate object.
func TestVetJSONPositions(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml": "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Release\nmetadata: {name: r}\nspec:\n  componentVersionRef: {name: cv}\n  priority: high\n",
		"b.yaml": "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Registry\nmetadata:\n  name: r\n   namespace: x\n",
		"c.yaml": "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Registry\nmetadata: {name: r}\nspec: {hostname: a.example.com}\n---\n" +
			"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Registry\nmetadata:\n  name: r\nspec: {hostname: b.example.com}\n",
	}
	for name, src := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	t.Chdir(dir)

	code, text, stderr := solar(t, "vet", ".")
	assert.Equal(t, 1, code)
	assert.Empty(t, text)
	code, stdout, _ := solar(t, "vet", "-o", "json", ".")
	assert.Equal(t, 1, code)
	var got struct {
		Problems diag.List `json:"problems"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	want := diag.List{
		{File: "a.yaml", Line: 6, Column: 3, Path: "spec.priority", Message: `"high" is a string; want an integer (int32), e.g. priority: 10`, Severity: diag.Error},
		{File: "b.yaml", Line: 5, Column: 13, Message: "syntax error: mapping values are not allowed in this context", Severity: diag.Error},
		{File: "c.yaml", Line: 9, Column: 3, Path: "metadata.name", Message: "duplicate Registry default/r, first defined at c.yaml:3", Severity: diag.Error},
	}
	assert.Equal(t, want, got.Problems)
	var lines []string
	for _, p := range want {
		lines = append(lines, p.String())
	}
	assert.Equal(t, strings.Join(lines, "\n")+"\n3 errors, 0 warnings\n", stderr, "the text output shows the same, then the count")
	assert.Contains(t, stdout, `"column": 3`)
}
