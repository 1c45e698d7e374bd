package sitereport

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
)

// TestLiveReadsLaterImports: a reader opened before an import sees the
// imported reports at its next look (after its interval), not before; a
// folder that can no longer be read is an error, not the old reports.
func TestLiveReadsLaterImports(t *testing.T) {
	k, v := newKey(t)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	into := filepath.Join(t.TempDir(), "reports")
	require.NoError(t, os.Mkdir(into, 0o700))
	ctx := context.Background()

	l, err := NewLive(into, time.Minute)
	require.NoError(t, err)
	clock := at
	l.now, l.checked = func() time.Time { return clock }, clock
	_, err = l.Report(ctx, "alpha", "edge-1")
	assert.Contains(t, err.Error(), "not found", "nothing imported yet")

	_, err = Import(ctx, exportAt(t, k, at), v, into, at)
	require.NoError(t, err)
	_, err = l.Report(ctx, "alpha", "edge-1")
	assert.Contains(t, err.Error(), "not found", "within the interval the folder is not read again")

	clock = clock.Add(time.Minute)
	u, err := l.Report(ctx, "alpha", "edge-1")
	require.NoError(t, err, "the import is read at the next look")
	assert.Equal(t, "north", u.GetAnnotations()[api.AnnotationReportSite])

	require.NoError(t, os.RemoveAll(into))
	clock = clock.Add(time.Minute)
	_, err = l.Report(ctx, "alpha", "edge-1")
	assert.ErrorContains(t, err, "reading the imported reports")

	_, err = NewLive(filepath.Join(t.TempDir(), "missing"), time.Minute)
	assert.Error(t, err, "a folder that does not exist is an error at start")
}
