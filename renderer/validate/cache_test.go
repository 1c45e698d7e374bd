package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/load"
)

// TestCacheGivesTheSameProblems runs validation three times over one cache: a
// cold run, a warm one, and one after the objects moved between files and one
// broke. Each must report what a run without a cache reports.
func TestCacheGivesTheSameProblems(t *testing.T) {
	cacheDir := t.TempDir()
	registry := head + "kind: Registry\nmetadata: {name: r}\nspec: {hostname: \"registry.local:5000\", plainHTTP: true}\n"
	target := head + "kind: Target\nmetadata: {name: t}\nspec: {renderRegistryRef: {name: r}}\n"
	broken := head + "kind: Target\nmetadata: {name: u}\nspec: {renderRegistryRef: {name: 7}}\n"
	runs := []string{registry + "---\n" + target, registry + "---\n" + target, "# moved\n" + target + "---\n" + registry + "---\n" + broken}
	for i, src := range runs {
		want := vet(t, Options{}, src)
		require.NotEmpty(t, want, "the policy warns about the plain-HTTP registry")
		assert.Equal(t, want, vet(t, Options{CacheDir: cacheDir}, src), "run %d", i)
	}
	info, err := os.Stat(filepath.Join(cacheDir, cacheFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "only its owner reads the cache")
}

// TestCacheHits counts the objects a warm run takes from the cache: all of
// them, and none once a policy changed.
func TestCacheHits(t *testing.T) {
	cacheDir, policyDir := t.TempDir(), t.TempDir()
	objs, problems, _ := load.Paths([]string{"../../examples"}, load.Options{})
	require.Empty(t, problems)
	writePolicy := func(deny bool) {
		rule := "deny: \"no-beta\": [for ns, _ in input.objects.Target if ns == \"beta\" && " + map[bool]string{true: "true", false: "false"}[deny] +
			" {kind: \"Target\", namespace: ns, name: \"plant-1\", path: \"metadata\", message: \"no beta\"}]\n"
		require.NoError(t, os.WriteFile(filepath.Join(policyDir, "p.cue"), []byte("package policy\n\n"+rule), 0o644))
	}
	hits := func() (int, []string) {
		v, err := New(Options{CacheDir: cacheDir, PolicyDirs: []string{policyDir}})
		require.NoError(t, err)
		_, problems := v.Validate(objs)
		var msgs []string
		for _, p := range problems {
			msgs = append(msgs, p.Message)
		}
		return len(v.cache.valid), msgs
	}
	writePolicy(false)
	n, _ := hits()
	assert.Zero(t, n, "a cold cache")
	n, msgs := hits()
	assert.Equal(t, len(objs), n, "every object of the examples was checked before")
	assert.Len(t, msgs, 1, "the shared-agent-namespace warning, from the cached policy results")

	writePolicy(true)
	n, msgs = hits()
	assert.Zero(t, n, "a changed policy empties the cache")
	assert.Contains(t, strings.Join(msgs, "\n"), "no beta (policy no-beta)")
}
