package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestContainerMemoryLimit: inside a container with a memory limit, solar
// gives Go's collector a soft limit of 90 % of it; "max", v1's unlimited
// value, a missing file or GOMEMLIMIT leave Go's default.
func TestContainerMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		assert.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	v2, unlimited, v1 := file("v2", "4294967296\n"), file("max", "max\n"), file("v1", "9223372036854771712\n")
	none := func(string) string { return "" }
	assert.Equal(t, int64(4294967296/10*9), containerMemoryLimit(none, []string{v2}))
	assert.Equal(t, int64(4294967296/10*9), debug.SetMemoryLimit(-1), "the collector's limit is set")
	assert.Equal(t, int64(4294967296/10*9), containerMemoryLimit(none, []string{unlimited, filepath.Join(dir, "missing"), v2}), "the first file that holds a limit")
	for _, files := range [][]string{{unlimited}, {v1}, {filepath.Join(dir, "missing")}} {
		assert.Zero(t, containerMemoryLimit(none, files), files)
	}
	assert.Zero(t, containerMemoryLimit(func(k string) string { return map[string]string{"GOMEMLIMIT": "800MiB"}[k] }, []string{v2}),
		"GOMEMLIMIT is the user's")
}
