package crdgen

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/config/crd"
)

var update = flag.Bool("update", false, "write the generated CRDs into config/crd")

// TestCommittedCRDsAreGenerated: config/crd holds exactly what Generate
// writes, so a schema change without `make crds` fails here.
func TestCommittedCRDsAreGenerated(t *testing.T) {
	files, err := Generate()
	require.NoError(t, err)
	require.Len(t, files, 14, "one CRD per kind")
	dir := filepath.Join("..", "..", "config", "crd")
	if *update {
		old, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		require.NoError(t, err)
		for _, f := range old {
			require.NoError(t, os.Remove(f))
		}
		for name, b := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
		}
		return
	}
	committed, err := fs.Glob(crd.FS, "*.yaml")
	require.NoError(t, err)
	for _, name := range committed {
		if _, ok := files[name]; !ok {
			t.Errorf("config/crd/%s is no kind's CRD: remove it (make crds)", name)
		}
	}
	for name, want := range files {
		got, err := fs.ReadFile(crd.FS, name)
		if err != nil {
			t.Errorf("config/crd/%s is missing: run make crds", name)
			continue
		}
		assert.Equal(t, string(want), string(got), "config/crd/%s differs from the schemas: run make crds", name)
	}
}

// TestSpecRequiredAsInTheSchemas: a CRD requires spec where the schema
// says spec! and not where it says spec? (an agent's TargetReport starts
// without one).
func TestSpecRequiredAsInTheSchemas(t *testing.T) {
	files, err := Generate()
	require.NoError(t, err)
	for kind, want := range map[string]bool{"Target": true, "Release": true, "TargetReport": false, "Component": false, "Rollout": true} {
		var doc struct {
			Spec struct {
				Versions []struct {
					Schema struct {
						OpenAPIV3Schema struct{ Required []string }
					}
				}
			}
		}
		require.NoError(t, yaml.Unmarshal(files[FileName(kind)], &doc))
		assert.Equal(t, want, slices.Contains(doc.Spec.Versions[0].Schema.OpenAPIV3Schema.Required, "spec"), kind)
	}
}
