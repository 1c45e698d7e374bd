package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVetMirror: a PipelineConfig's mirror that names no Registry, one of
// another namespace without a grant, or a path that is no repository path
// is an error at its line; render then writes nothing.
func TestVetMirror(t *testing.T) {
	const objects = `apiVersion: solar.opendefense.cloud/v1alpha1
kind: Registry
metadata: {name: render, namespace: site}
spec: {hostname: render.example}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Target
metadata: {name: t, namespace: site}
spec: {renderRegistryRef: {name: render}}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Registry
metadata: {name: mirror, namespace: other}
spec: {hostname: site.example}
`
	for _, tc := range []struct{ name, mirror, want string }{
		{"no such registry", "registryRef: {name: nowhere}",
			"config.yaml:8: spec.registries.mirror.registryRef: refers to a missing Registry site/nowhere"},
		{"not granted", "registryRef: {name: mirror, namespace: other}",
			"config.yaml:8: spec.registries.mirror.registryRef: refers across namespaces without a grant: Registry other/mirror"},
		{"bad path", "registryRef: {name: render}, path: Mirror/",
			"config.yaml:8:43: spec.registries.mirror.path: \"Mirror/\" must be a repository path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte(objects), 0o644))
			config := "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: PipelineConfig\nmetadata:\n  name: solar\n  namespace: site\nspec:\n  registries:\n    mirror: {" + tc.mirror + "}\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o644))
			code, _, stderr := solar(t, "vet", dir)
			assert.Equal(t, 1, code, stderr)
			assert.Contains(t, stderr, filepath.Join(dir, tc.want))
			out := filepath.Join(t.TempDir(), "out")
			code, _, stderr = solar(t, "render", "-q", "--out", out, dir)
			assert.Equal(t, 1, code, stderr)
			assert.NoDirExists(t, out, "nothing written")
		})
	}
}
