package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerify: a layout solar wrote keeps its promises; a lost release chart
// version and a lost blob are each named, exit 1.
func TestVerify(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := solar(t, "verify", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)

	require.NoError(t, os.WriteFile(filepath.Join(out, "alpha/alpha/release-podinfo-stable/index.json"), []byte(`{"schemaVersion":2,"manifests":[]}`), 0o600))
	blobs := filepath.Join(out, "beta/beta/release-podinfo/blobs/sha256")
	entries, err := os.ReadDir(blobs)
	require.NoError(t, err)
	var layer string
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		if info.Size() > 1000 { // the chart layer, not the manifest or config
			layer = e.Name()
		}
	}
	require.NotEmpty(t, layer)
	require.NoError(t, os.Remove(filepath.Join(blobs, layer)))

	code, stdout, _ = solar(t, "verify", "--out", out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "alpha/bootstrap-edge-1:0.0.1: names alpha/alpha/release-podinfo-stable at 0.0.1, which the store does not have\n")
	assert.Contains(t, stdout, "beta/beta/release-podinfo:0.0.1: blob sha256:"+layer+" is missing\n")
	code, stdout, _ = solar(t, "verify", "--out", out, "-n", "beta", "-o", "json")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, `"repository": "beta/beta/release-podinfo"`)
	assert.NotContains(t, stdout, "alpha/", "-n beta verifies beta only")
}
