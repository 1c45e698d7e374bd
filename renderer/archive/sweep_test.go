package archive

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/store"
)

// plant makes what a run killed with SIGKILL leaves (a folder with a file
// in it when dir, else a file), last changed age ago.
func plant(t *testing.T, name string, dir bool, age time.Duration) {
	t.Helper()
	if dir {
		require.NoError(t, os.Mkdir(name, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(name, "blob"), []byte("left"), 0o600))
	} else {
		require.NoError(t, os.WriteFile(name, []byte("half an archive"), 0o600))
	}
	old := time.Now().Add(-age)
	require.NoError(t, os.Chtimes(name, old, old))
}

// held locks name as a live run does, until the test ends.
func held(t *testing.T, name string) {
	t.Helper()
	f, err := lockPath(name)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
}

// TestLeftoversRemoved (issue 44): what a push of an archive (its unpack
// folder in the temporary directory) or an export (its temporary file
// beside the archive, before the rename) killed with SIGKILL leaves is
// removed by the next push or export; what a live run holds (locked), what
// was made moments ago (not locked yet) and what is not solar's are left.
func TestLeftoversRemoved(t *testing.T) {
	k, _ := signingKey(t)
	layout := signedLayout(t, k, false)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out := t.TempDir()
	p := func(dir, name string) string { return filepath.Join(dir, name) }
	plant(t, p(tmp, "solar-archive-dead"), true, time.Hour)
	plant(t, p(tmp, "solar-archive-live"), true, time.Hour)
	held(t, p(tmp, "solar-archive-live"))
	plant(t, p(tmp, "solar-archive-new"), true, 0)
	plant(t, p(tmp, "solar-archive-file"), false, time.Hour)
	plant(t, p(tmp, "other"), true, time.Hour)
	plant(t, p(out, ".solar-export-dead"), false, time.Hour)
	plant(t, p(out, ".solar-export-live"), false, time.Hour)
	held(t, p(out, ".solar-export-live"))
	plant(t, p(out, ".solar-export-new"), false, 0)
	plant(t, p(out, ".solar-export-dir"), true, time.Hour)
	require.NoError(t, os.Symlink(p(out, ".solar-export-live"), p(out, ".solar-export-link")))

	ctx := context.Background()
	l, err := store.OpenLayout(ctx, layout, store.LayoutOptions{ReadOnly: true, MustExist: true})
	require.NoError(t, err)
	defer l.Close()
	file := p(out, "bundle.tar")
	_, err = WriteFile(ctx, l, file)
	require.NoError(t, err)
	assert.Equal(t, []string{".solar-export-dir", ".solar-export-link", ".solar-export-live", ".solar-export-new", "bundle.tar"},
		names(t, out), "the dead run's file removed, and this run's renamed")

	u, err := Unpack(ctx, file, DefaultLimits)
	require.NoError(t, err)
	mine := filepath.Base(u.tmp.dir)
	assert.ElementsMatch(t, []string{"other", "solar-archive-file", "solar-archive-live", "solar-archive-new", mine},
		names(t, tmp), "the dead run's folder removed")
	require.NoError(t, u.Close())
	assert.NotContains(t, names(t, tmp), mine, "Close removes this run's folder")
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
