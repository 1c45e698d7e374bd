package sign

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	private := filepath.Join(dir, "cosign.key")
	require.NoError(t, os.WriteFile(private, []byte("PEM"), 0o600))
	b, perm, err := ReadKeyFile(private)
	require.NoError(t, err)
	assert.Equal(t, "PEM", string(b))
	assert.Equal(t, fs.FileMode(0o600), perm)

	shared := filepath.Join(dir, "shared.key")
	require.NoError(t, os.WriteFile(shared, []byte("PEM"), 0o644))
	_, perm, err = ReadKeyFile(shared)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o644), perm)

	big := filepath.Join(dir, "big.key")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxKeyFile+1), 0o600))
	_, _, err = ReadKeyFile(big)
	assert.ErrorContains(t, err, "larger than 64 KiB: not a key")

	_, _, err = ReadKeyFile(dir)
	assert.ErrorContains(t, err, "not a regular file")
}
