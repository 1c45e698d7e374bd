package testenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SolarBinary builds the solar CLI (with the build tags given) into the
// test's temporary directory: kills and concurrent runs need real
// processes.
func SolarBinary(t testing.TB, tags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "solar")
	cmd := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", bin, "./cmd/solar")
	cmd.Dir = Root(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building solar: %s", out)
	return bin
}

// LayoutIndexes reads the index.json of every repository of a solar layout,
// by repository: each must be one whole JSON document. A layout not made
// yet (a run killed before it) has none.
func LayoutIndexes(t testing.TB, dir string) map[string]ocispec.Index {
	t.Helper()
	out := map[string]ocispec.Index{}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return out
	}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "index.json" {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var idx ocispec.Index
		require.NoError(t, json.Unmarshal(b, &idx), "%s is whole", p)
		assert.Equal(t, 2, idx.SchemaVersion)
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		require.NoError(t, err)
		out[filepath.ToSlash(rel)] = idx
		return nil
	}))
	return out
}

// RunSolar runs the solar binary bin with stdin (a password, say, followed
// by a newline) and returns its exit code, stdout and stderr.
func RunSolar(t testing.TB, bin, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}
