package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSplitHostile (issue 52): a part missing, damaged (one byte flipped),
// reordered, cut short, a link, or not listed; a list that is malformed, a
// link, or that lists a forged whole: each is refused (ErrRefused), naming
// the part, and nothing is unpacked. A whole whose parts and list were all
// forged consistently is still refused by Unpack's own checks.
func TestSplitHostile(t *testing.T) {
	sets, tmp := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	src := bigArchive(t)
	orig, err := os.ReadFile(src)
	require.NoError(t, err)
	list, _ := split(t, src, 1<<20)
	part := func(l string, i int) string {
		return filepath.Join(filepath.Dir(l), "bundle.tar.00"+string(rune('0'+i)))
	}
	edit := func(name string, change func([]byte) []byte) {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(name, change(b), 0o600))
	}
	editList := func(l string, change func(string) string) {
		edit(l, func(b []byte) []byte { return []byte(change(string(b))) })
	}
	cases := []struct {
		name   string
		change func(l string)
		want   []string
	}{
		{"missing part", func(l string) { require.NoError(t, os.Remove(part(l, 2))) }, []string{"bundle.tar.002 is missing"}},
		{"flipped byte", func(l string) { edit(part(l, 2), func(b []byte) []byte { b[1000] ^= 1; return b }) },
			[]string{"bundle.tar.002: its sha256 is"}},
		{"reordered", func(l string) {
			a, b := part(l, 1), part(l, 2)
			require.NoError(t, os.Rename(a, a+".x"))
			require.NoError(t, os.Rename(b, a))
			require.NoError(t, os.Rename(a+".x", b))
		}, []string{"bundle.tar.001: its sha256 is", "bundle.tar.002: its sha256 is"}},
		{"cut short", func(l string) { edit(part(l, 3), func(b []byte) []byte { return b[:len(b)-1] }) },
			[]string{"bundle.tar.003: its sha256 is"}},
		{"last part missing", func(l string) { require.NoError(t, os.Remove(part(l, 4))) }, []string{"bundle.tar.004 is missing"}},
		{"extra part", func(l string) { require.NoError(t, os.WriteFile(part(l, 5), []byte("x"), 0o600)) },
			[]string{"bundle.tar.005 is not in the list"}},
		{"symlink part", func(l string) {
			p := part(l, 2)
			require.NoError(t, os.Rename(p, p+".real"))
			require.NoError(t, os.Symlink(filepath.Base(p)+".real", p))
		}, []string{"bundle.tar.002 is a symbolic link"}},
		{"symlink list", func(l string) {
			require.NoError(t, os.Rename(l, l+".real"))
			require.NoError(t, os.Symlink(filepath.Base(l)+".real", l))
		}, []string{"bundle.tar.sha256 is a symbolic link"}},
		{"part not listed", func(l string) {
			lines := strings.SplitAfter(readString(t, l), "\n")
			editList(l, func(string) string { return strings.Join(append(lines[:3:3], lines[4]), "") })
		}, []string{"bundle.tar.004 is not in the list"}},
		{"duplicate line", func(l string) {
			lines := strings.SplitAfter(readString(t, l), "\n")
			editList(l, func(string) string { return lines[0] + lines[0] + strings.Join(lines[1:], "") })
		}, []string{`line 2: "bundle.tar.001" where the list names part bundle.tar.002`}},
		{"path in a name", func(l string) {
			editList(l, func(s string) string { return strings.Replace(s, "  bundle.tar.001", "  ../bundle.tar.001", 1) })
		}, []string{`line 1: "../bundle.tar.001"`}},
		{"whole twice", func(l string) {
			lines := strings.SplitAfter(readString(t, l), "\n")
			editList(l, func(s string) string { return s + lines[4] })
		}, []string{`line 5: "bundle.tar" where the list names part bundle.tar.005`}},
		{"no newline", func(l string) { editList(l, func(s string) string { return strings.TrimSuffix(s, "\n") }) },
			[]string{"does not end with a newline"}},
		{"forged whole line", func(l string) {
			edit(part(l, 2), func(b []byte) []byte { b[1000] ^= 1; return b })
			relist(t, l, 4, orig)
		}, []string{"the parts together have a sha256 other than the list gives for bundle.tar"}},
		{"forged all", func(l string) {
			// The layer's bytes are random: byte 4096 of part 2 is the
			// layer's, whose blob's sha256 no longer matches its name.
			edit(part(l, 2), func(b []byte) []byte { b[4096] ^= 1; return b })
			whole := bytes.Join([][]byte{readBytes(t, part(l, 1)), readBytes(t, part(l, 2)), readBytes(t, part(l, 3)), readBytes(t, part(l, 4))}, nil)
			relist(t, l, 4, whole)
		}, []string{"its content's sha256 is"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := copySet(t, list, sets)
			c.change(l)
			_, err := UnpackParts(context.Background(), l, DefaultLimits)
			require.ErrorIs(t, err, ErrRefused)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Empty(t, names(t, tmp), "nothing unpacked")
		})
	}
}

// TestSplitChangedWhileRead: a part changed in place after the check (the
// same file) is refused as it is read, not unpacked.
func TestSplitChangedWhileRead(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	list, _ := split(t, bigArchive(t), 1<<20)
	ps, err := readList(list)
	require.NoError(t, err)
	require.NoError(t, ps.check(context.Background(), DefaultLimits))
	p := filepath.Join(filepath.Dir(list), "bundle.tar.003")
	b := readBytes(t, p)
	b[10] ^= 1
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b[10:11], 10)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r := &partsReader{ps: ps, whole: sha256.New()}
	defer r.close()
	_, err = unpack(context.Background(), r, list, DefaultLimits)
	require.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "bundle.tar.003 changed since it was checked")
	assert.Empty(t, names(t, tmp), "nothing left unpacked")
}

// TestSplitBounded: parts together larger than the largest archive push
// reads are refused before they are read whole.
func TestSplitBounded(t *testing.T) {
	list, _ := split(t, bigArchive(t), 1<<20)
	lim := Limits{Entries: 10, Blob: 1 << 20, Total: 1 << 20, Metadata: 1 << 10}
	_, err := UnpackParts(context.Background(), list, lim)
	require.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "bundle.tar.004: the parts so far are more than")
}

func readBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}

func readString(t *testing.T, name string) string { return string(readBytes(t, name)) }
