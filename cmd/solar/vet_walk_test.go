package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestVetRepositoryRoot: solar vet . passes in this repository, as the
// README's "Inside a GitOps repository" promises: CRDs, install manifests and
// Helm templates are skipped, testdata/ is left out by its .solarignore.
func TestVetRepositoryRoot(t *testing.T) {
	code, stdout, stderr := solar(t, "vet", testenv.Root(t))
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	assert.Contains(t, lines[len(lines)-1], "objects valid", "vet's summary")
	for _, line := range lines[:len(lines)-1] {
		assert.Contains(t, line, "warning:", "the repository must vet without errors")
	}
}

// TestVetHelmTemplates: the templates of a chart without its Chart.yaml
// (cmd/solar/chaintest's, {{ .Release.Name }} read as a mapping key) are
// skipped and counted while walking; named, or with --strict, they fail.
func TestVetHelmTemplates(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	require.NoError(t, os.CopyFS(filepath.Join(dir, "app"), os.DirFS("chaintest/testdata/app")))
	template := filepath.Join(dir, "app", "templates", "configmap.yaml")

	code, stdout, stderr := solar(t, "vet", "-v", dir)
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, "4 files that hold no Kubernetes objects", "the two templates, the two CI workflows of examples/ci")
	assert.NotContains(t, stderr, "configmap.yaml")

	code, _, stderr = solar(t, "vet", "--strict", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, template+":4: metadata.name: ")

	code, _, stderr = solar(t, "vet", template)
	assert.Equal(t, 1, code, "a file named on the command line is read")
	assert.Contains(t, stderr, template+":4: metadata.name: ")
}
