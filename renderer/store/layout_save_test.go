package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSaveLast: a layout saves the repositories told to SaveLast after the
// others, whatever the order they changed in (through an overlay too), and
// the others in the order they first changed.
func TestSaveLast(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	l, err := OpenLayout(ctx, dir, LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	o := Overlay(l, l)
	for _, name := range []string{"n/last", "n/b", "m/also-last", "n/a"} {
		putText(t, l, name, "0.0.1", name)
		if filepath.Base(name) != "a" && filepath.Base(name) != "b" {
			repo, err := o.Repository(ctx, name)
			require.NoError(t, err)
			repo.(LastSaver).SaveLast()
		}
	}
	l.mu.Lock()
	order := l.saveOrder()
	l.mu.Unlock()
	assert.Equal(t, []string{"n/b", "n/a", "n/last", "m/also-last"}, order)
	require.NoError(t, l.Save(ctx))
	for _, name := range order {
		_, err := os.Stat(filepath.Join(dir, name, "index.json"))
		assert.NoError(t, err, name)
	}
}
