package docs

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestDocsMarkEveryCommand: every shell block says whether it runs, and the
// variables the runnable ones use are introduced before them.
func TestDocsMarkEveryCommand(t *testing.T) {
	root := testenv.Root(t)
	names, err := docFiles(root)
	require.NoError(t, err)
	runnable := 0
	for _, f := range names {
		blocks, err := parseFile(root, f)
		require.NoError(t, err)
		for _, p := range check(blocks) {
			t.Error(p)
		}
		for _, b := range blocks {
			if b.mark.kind == "run" {
				runnable++
			}
		}
	}
	assert.Positive(t, runnable, "no block is marked <!-- run -->")
}

// TestDocs runs every block marked <!-- run --> and writes every block
// marked <!-- file: PATH -->, in order, one document at a time.
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the documented commands need a registry, NATS and a Kubernetes API server")
	}
	root := testenv.Root(t)
	solar := buildSolar(t, root)
	names, err := docFiles(root)
	require.NoError(t, err)
	for _, f := range names {
		blocks, err := parseFile(root, f)
		require.NoError(t, err)
		if !hasRunnable(blocks) {
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), ".md"), func(t *testing.T) {
			// Each document has its own copy and services: they run
			// side by side, and mostly wait for the services to start.
			t.Parallel()
			s := newSession(t, root, solar)
			for _, b := range blocks {
				switch b.mark.kind {
				case "file":
					s.write(b)
				case "run":
					if !s.run(b) {
						return
					}
				}
			}
		})
	}
}

func hasRunnable(blocks []block) bool {
	for _, b := range blocks {
		if b.mark.kind == "run" {
			return true
		}
	}
	return false
}

// buildSolar builds cmd/solar once into a temporary folder.
func buildSolar(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "solar")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/solar")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building solar: %s", out)
	return bin
}
