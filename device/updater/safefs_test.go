package updater

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFoldersWritableByOthersRefused: the root and the folders only root
// writes (versions/, log/) are refused when group or others may write them:
// whoever could would swap the agent link, a binary or the log. The updater
// does not start (New), and says why.
func TestFoldersWritableByOthersRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  func(Paths) string
		mode os.FileMode
	}{
		{"root group-writable", func(p Paths) string { return p.Root }, 0o775},
		{"root writable by others", func(p Paths) string { return p.Root }, 0o757},
		{"root group-writable, sticky", func(p Paths) string { return p.Root }, 0o1775},
		{"versions group-writable", Paths.Versions, 0o775},
		{"versions writable by others", Paths.Versions, 0o757},
		{"log group-writable", func(p Paths) string { return filepath.Dir(p.Log()) }, 0o770},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Paths{Root: t.TempDir()}
			_, err := New(context.Background(), Options{Paths: p})
			require.NoError(t, err, "the folders as the updater makes them")
			require.NoError(t, os.Chmod(tc.dir(p), tc.mode))
			_, err = New(context.Background(), Options{Paths: p})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.dir(p)+" is writable by group or others")
		})
	}
}
