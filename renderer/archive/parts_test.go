package archive

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1MiB": 1 << 20, "1M": 1e6, "64KiB": 64 << 10, "65536": 65536,
		"100K": 100e3, "2GiB": 2 << 30, "3G": 3e9, "700MB": 700e6, "1 MiB": 1 << 20} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for in, want := range map[string]string{"65535": "less than the smallest part of 65536 bytes",
		"64K": "less than the smallest part", "1TiB": "not a size", "-1M": "not a size", "": "not a size",
		"1.5M": "not a size", "99999999999999999G": "too large"} {
		_, err := ParseSize(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
}

// bigArchive is an archive of more than 3 MiB (one version with a layer of
// random bytes).
func bigArchive(t *testing.T) string {
	t.Helper()
	layer := make([]byte, 3<<20+100<<10)
	_, err := rand.Read(layer)
	require.NoError(t, err)
	return sharedArchive(t, 1, layer)
}

// split writes the archive file src as a split archive of parts of size
// into a new folder and returns its list and parts.
func split(t *testing.T, src string, size int64) (string, []Part) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bundle.tar")
	parts, err := WriteParts(context.Background(), out, size, func(whole string) error {
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(whole, b, 0o600)
		}
		return err
	})
	require.NoError(t, err)
	return out + ListSuffix, parts
}

// TestSplitRejoin (issue 52): an archive of more than 3 MiB split at 1 MiB
// is four parts of at most 1 MiB (0600), which together are its bytes; the
// list is sha256sum's (sha256sum -c checks it, and with --ignore-missing
// the parts a medium holds); nothing else is left beside them; the parts
// unpack as the file does.
func TestSplitRejoin(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	src := bigArchive(t)
	want, err := os.ReadFile(src)
	require.NoError(t, err)
	list, parts := split(t, src, 1<<20)
	dir := filepath.Dir(list)
	require.Len(t, parts, 4)
	var joined []byte
	for i, p := range parts {
		assert.Equal(t, filepath.Join(dir, fmt.Sprintf("bundle.tar.%03d", i+1)), p.Name)
		b, err := os.ReadFile(p.Name)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(b), 1<<20)
		assert.Equal(t, int64(len(b)), p.Size)
		sum := sha256.Sum256(b)
		assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), p.SHA256)
		info, err := os.Stat(p.Name)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		joined = append(joined, b...)
	}
	assert.True(t, bytes.Equal(want, joined), "the parts together are the archive")
	assert.Equal(t, []string{"bundle.tar.001", "bundle.tar.002", "bundle.tar.003", "bundle.tar.004", "bundle.tar.sha256"}, names(t, dir))
	b, err := os.ReadFile(list)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 5)
	whole := sha256.Sum256(want)
	assert.Equal(t, hex.EncodeToString(whole[:])+"  bundle.tar", lines[4])

	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "-c", "--ignore-missing", "bundle.tar.sha256")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "bundle.tar.004: OK")
	}

	u, err := UnpackParts(context.Background(), list, DefaultLimits)
	require.NoError(t, err)
	require.NoError(t, u.Close())
	w, err := Unpack(context.Background(), src, DefaultLimits)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, w.Versions, u.Versions)
	assert.Empty(t, names(t, os.TempDir()), "the unpacked folders removed")
}

// TestSplitReplacesAndLeavesNothing: a second split with fewer parts removes
// the parts of the first the new list does not name; a write that fails
// leaves nothing of the set; a bad size writes nothing.
func TestSplitReplacesAndLeavesNothing(t *testing.T) {
	src := bigArchive(t)
	list, parts := split(t, src, 1<<20)
	dir, out := filepath.Dir(list), strings.TrimSuffix(list, ListSuffix)
	require.Len(t, parts, 4)
	write := func(whole string) error {
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(whole, b, 0o600)
		}
		return err
	}
	parts, err := WriteParts(context.Background(), out, 2<<20, write)
	require.NoError(t, err)
	require.Len(t, parts, 2)
	assert.Equal(t, []string{"bundle.tar.001", "bundle.tar.002", "bundle.tar.sha256"}, names(t, dir))
	u, err := UnpackParts(context.Background(), list, DefaultLimits)
	require.NoError(t, err)
	require.NoError(t, u.Close())

	fresh := filepath.Join(t.TempDir(), "bundle.tar")
	_, err = WriteParts(context.Background(), fresh, 1<<20, func(whole string) error {
		require.NoError(t, write(whole))
		return errors.New("export failed")
	})
	require.EqualError(t, err, "export failed")
	assert.Empty(t, names(t, filepath.Dir(fresh)), "nothing of the set, no temporary folder")
	_, err = WriteParts(context.Background(), fresh, 1000, write)
	require.Error(t, err)
	assert.Empty(t, names(t, filepath.Dir(fresh)))
}

// TestSplitSizes: a whole of exactly two parts' size is two full parts; of
// one byte more, three, the last of one byte; an empty one is an error.
func TestSplitSizes(t *testing.T) {
	for size, want := range map[int64][]int64{2 * MinPartSize: {MinPartSize, MinPartSize},
		2*MinPartSize + 1: {MinPartSize, MinPartSize, 1}, 10: {10}} {
		src := filepath.Join(t.TempDir(), "src")
		require.NoError(t, os.WriteFile(src, bytes.Repeat([]byte{'x'}, int(size)), 0o600))
		_, parts := split(t, src, MinPartSize)
		var got []int64
		for _, p := range parts {
			got = append(got, p.Size)
		}
		assert.Equal(t, want, got, size)
	}
	_, err := WriteParts(context.Background(), filepath.Join(t.TempDir(), "x"), MinPartSize, func(whole string) error {
		return os.WriteFile(whole, nil, 0o600)
	})
	assert.ErrorContains(t, err, "is empty")
}

// copySet copies the files of the split archive list into a new folder of
// under and returns the copy's list.
func copySet(t *testing.T, list, under string) string {
	t.Helper()
	dst, err := os.MkdirTemp(under, "set-")
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Dir(list))
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(list), e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600))
	}
	return filepath.Join(dst, filepath.Base(list))
}

// relist writes the list of the set again from its parts' contents (as a
// forger would), with the whole given.
func relist(t *testing.T, list string, n int, whole []byte) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("bundle.tar.%03d", i)
		part, err := os.ReadFile(filepath.Join(filepath.Dir(list), name))
		require.NoError(t, err)
		fmt.Fprintf(&b, "%x  %s\n", sha256.Sum256(part), name)
	}
	fmt.Fprintf(&b, "%x  bundle.tar\n", sha256.Sum256(whole))
	require.NoError(t, os.WriteFile(list, []byte(b.String()), 0o600))
}
