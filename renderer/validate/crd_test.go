package validate

import (
	"io/fs"
	"slices"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/config/crd"
	"github.com/solar-pipeline/solar/schemas"
)

// TestCRDsMatchSchemas: the CRDs the API server gets name exactly the spec
// fields of the CUE schemas.
func TestCRDsMatchSchemas(t *testing.T) {
	schema, err := compileDir(cuecontext.New(), "schemas", schemas.FS, nil)
	require.NoError(t, err)
	for kind, file := range map[string]string{
		"Target":       "solar.opendefense.cloud_targets.yaml",
		"TargetReport": "solar.opendefense.cloud_targetreports.yaml",
	} {
		b, err := fs.ReadFile(crd.FS, file)
		require.NoError(t, err)
		var doc struct {
			Spec struct {
				Names    struct{ Kind string }
				Versions []struct {
					Name   string
					Schema struct {
						OpenAPIV3Schema struct {
							Properties map[string]struct {
								Properties map[string]any
							}
						}
					}
				}
			}
		}
		require.NoError(t, yaml.Unmarshal(b, &doc))
		assert.Equal(t, kind, doc.Spec.Names.Kind)
		require.Len(t, doc.Spec.Versions, 1)
		assert.Equal(t, "v1alpha1", doc.Spec.Versions[0].Name)
		var crdFields []string
		for k := range doc.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties {
			crdFields = append(crdFields, k)
		}
		slices.Sort(crdFields)

		// spec is required (spec!) on a Target and optional (spec?) on a
		// TargetReport: look it up either way.
		spec := schema.LookupPath(cue.MakePath(cue.Def("#"+kind), cue.Str("spec").Optional()))
		if !spec.Exists() {
			spec = schema.LookupPath(cue.MakePath(cue.Def("#"+kind), cue.Str("spec")))
		}
		require.True(t, spec.Exists(), kind)
		iter, err := spec.Fields(cue.Optional(true))
		require.NoError(t, err)
		var cueFields []string
		for iter.Next() {
			cueFields = append(cueFields, iter.Selector().Unquoted())
		}
		slices.Sort(cueFields)
		assert.Equal(t, cueFields, crdFields, kind)
	}
}
