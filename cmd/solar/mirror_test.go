package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/mirror"
)

// TestVetMirror: a PipelineConfig's mirror that names no Registry, one of
// another namespace without a grant, a path that is no repository path, or
// a Registry the allow-list leaves out is an error at its line; render then
// writes nothing.
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
	for _, tc := range []struct{ name, registries, want string }{
		{"no such registry", "mirror: {registryRef: {name: nowhere}}",
			"config.yaml:7: spec.registries.mirror.registryRef: refers to a missing Registry site/nowhere"},
		{"not granted", "mirror: {registryRef: {name: mirror, namespace: other}}",
			"config.yaml:7: spec.registries.mirror.registryRef: refers across namespaces without a grant: Registry other/mirror"},
		{"bad path", "mirror: {registryRef: {name: render}, path: Mirror/}",
			"config.yaml:7:54: spec.registries.mirror.path: \"Mirror/\" must be a repository path"},
		// The mirror is a Registry: the allow-list holds for it as for any.
		{"not allowed", "mirror: {registryRef: {name: render}}, allowedHostnames: [ghcr.io]",
			"objects.yaml:4: spec.hostname: registry render.example is not in the PipelineConfig's spec.registries.allowedHostnames"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte(objects), 0o644))
			config := "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: PipelineConfig\nmetadata:\n  name: solar\n  namespace: site\nspec:\n  registries: {" + tc.registries + "}\n"
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

// TestDiffWithMirror: diff of examples/ against their mirrored input shows
// each application chart's OCIRepository moving to the site, and renders
// the application charts (level 3) from their sources: unchanged, none left
// unread for the site that cannot be reached.
func TestDiffWithMirror(t *testing.T) {
	examples, source, _ := mirroredExamples(t)
	plain := filepath.Join(t.TempDir(), "examples")
	require.NoError(t, os.CopyFS(plain, os.DirFS(examples)))
	for _, f := range []string{"pipeline.yaml", "registries.yaml"} {
		b, err := os.ReadFile(filepath.Join(examples, "shared", f))
		require.NoError(t, err)
		s := strings.Replace(string(b), "    mirror:\n      registryRef:\n        name: site\n", "", 1)
		require.NoError(t, os.WriteFile(filepath.Join(plain, "shared", f), []byte(s), 0o644))
	}
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := solar(t, "render", "-q", "--no-credentials", "--out", out, "-n", "beta", plain)
	require.Equal(t, 0, code, stderr)

	code, stdout, stderr := solar(t, "diff", "--no-credentials", "--out", out, "-n", "beta", examples)
	require.Equal(t, 0, code, stderr)
	copied, err := mirror.Repository(mirrorSite+"/mirror", source.Host+"/stefanprodan/charts/podinfo")
	require.NoError(t, err)
	assert.Contains(t, stdout, "-  url: oci://"+source.Host+"/stefanprodan/charts/podinfo\n+  url: oci://"+copied+"\n")
	assert.NotContains(t, stdout, "(level 3)", "the application charts render the same from their sources")
	assert.NotContains(t, stderr, "not rendered", "no chart is read from the site")
}
