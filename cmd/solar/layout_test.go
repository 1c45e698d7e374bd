package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayoutRefusesWhatIsNotOne: solar writes only into its own layouts and
// follows no symlink inside them. A render that trusts the namespace index
// does not open a repository whose entry holds: --full opens each.
func TestLayoutRefusesWhatIsNotOne(t *testing.T) {
	render := func(out string) (int, string) {
		code, _, stderr := solar(t, "render", "--no-credentials", "--full", "-n", "beta", "--out", out, "../../examples")
		return code, stderr
	}
	notLayout := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notLayout, "index.json"), []byte(`{"mine": true}`), 0o644))
	code, stderr := render(notLayout)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "is not empty and not a solar layout (no .solar-layout)")
	b, _ := os.ReadFile(filepath.Join(notLayout, "index.json"))
	assert.JSONEq(t, `{"mine": true}`, string(b), "left as it was")

	out := filepath.Join(t.TempDir(), "out")
	code, stderr = render(out)
	require.Equal(t, 0, code, stderr)

	secret := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{}`), 0o600))
	linked := filepath.Join(t.TempDir(), "linked")
	require.NoError(t, os.CopyFS(linked, os.DirFS(out)))
	repoIndex := filepath.Join("beta", "bootstrap-plant-1", "index.json")
	require.NoError(t, os.Remove(filepath.Join(linked, repoIndex)))
	require.NoError(t, os.Symlink(secret, filepath.Join(linked, repoIndex)))
	code, stderr = render(linked)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "index.json is not a regular file")

	b, err := os.ReadFile(filepath.Join(out, repoIndex))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, repoIndex), append(b, []byte(`{"trailing": 1}`)...), 0o600))
	code, stderr = render(out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "index.json is damaged")
}
