package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkLayoutGC: gc --keep 1 of a layout of 5,000 repositories with
// two versions each (every Target's bootstrap chart changed once): one
// save of the indexes, not one per repository.
func BenchmarkLayoutGC(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "out")
		l, err := OpenLayout(ctx, dir, LayoutOptions{})
		require.NoError(b, err)
		for r := range 5000 {
			name := fmt.Sprintf("ns-%d/bootstrap-edge-%d", r/100, r)
			putText(b, l, name, "0.0.1", name)
			putText(b, l, name, "0.0.2", name+" changed")
		}
		require.NoError(b, l.Save(ctx))
		require.NoError(b, l.Close())
		l, err = OpenLayout(ctx, dir, LayoutOptions{})
		require.NoError(b, err)
		b.StartTimer()
		res, err := l.GC(ctx, GCOptions{Keep: 1})
		require.NoError(b, err)
		require.Len(b, res.Versions, 5000)
		require.NoError(b, l.Close())
	}
}
