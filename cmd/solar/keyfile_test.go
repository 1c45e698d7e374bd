package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadKeyFileWarns: a private key that others may read is read, with a
// warning that says what to do; one that only its owner reads, without.
func TestReadKeyFileWarns(t *testing.T) {
	var stderr bytes.Buffer
	g := &globals{stderr: &stderr}
	key := filepath.Join(t.TempDir(), "cosign.key")
	require.NoError(t, os.WriteFile(key, []byte("PEM"), 0o644))
	b, err := readKeyFile(g, key)
	require.NoError(t, err)
	assert.Equal(t, "PEM", string(b))
	assert.Equal(t, "warning: "+key+" may be read by others (mode -rw-r--r--): chmod 600 it\n", stderr.String())

	stderr.Reset()
	require.NoError(t, os.Chmod(key, 0o600))
	_, err = readKeyFile(g, key)
	require.NoError(t, err)
	assert.Empty(t, stderr.String())
}
