package validate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
)

// TestCheckAsReadEqualsValidate: objects checked as they are read
// (load.Options.Each with Check, Targets slimmed to their typed form) give
// the same set and problems as Validate of the whole, which slims nothing;
// the examples with a broken Target and a Target that names a missing
// Registry, so problems of slimmed and of unslimmed Targets are compared.
func TestCheckAsReadEqualsValidate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(`apiVersion: solar.opendefense.cloud/v1alpha1
kind: Target
metadata: {name: lost, namespace: alpha, labels: {env: prod}}
spec: {renderRegistryRef: {name: nowhere}, userdata: {site: s9}}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Target
metadata: {name: broken, namespace: alpha}
spec: {renderRegistryRef: {name: local}, colour: red}
`), 0o644))
	paths := []string{"../../examples", dir}

	whole, err := New(Options{})
	require.NoError(t, err)
	objs, problems, _ := load.Paths(paths, load.Options{})
	require.False(t, problems.HasErrors(), "%v", problems)
	set, want := whole.Validate(objs)

	asRead, err := New(Options{})
	require.NoError(t, err)
	objs, _, _ = load.Paths(paths, load.Options{Each: asRead.Check})
	slimmed := 0
	for _, o := range objs {
		if o.Kind == api.KindTarget && o.Fields["spec"].(map[string]any)["userdata"] == nil {
			slimmed++
		}
	}
	assert.Positive(t, slimmed, "Targets slimmed")
	got, problems := asRead.Finish(objs)
	assert.Equal(t, want, problems)
	require.NotEmpty(t, problems)
	require.Equal(t, len(set.Targets), len(got.Targets))
	for i := range set.Targets {
		assert.Equal(t, set.Targets[i], got.Targets[i])
	}
}
