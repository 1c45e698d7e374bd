package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportSharesReleaseLists: the Targets of a namespace that get the
// same releases share one list of them in the report (100,000 Targets held
// 100,000 lists of 5); those of another namespace, whose release charts
// are others, have their own.
func TestReportSharesReleaseLists(t *testing.T) {
	for _, batch := range []bool{false, true} {
		_, report := runLayout(t, generated(t, 8, 4), t.TempDir(), batch)
		require.Len(t, report.Targets, 8)
		first := func(i int) *ReleaseReport { return &report.Targets[i].Releases[0] }
		require.NotEmpty(t, report.Targets[0].Releases)
		assert.Same(t, first(0), first(1), "batch %v: one namespace, the same releases", batch)
		assert.Same(t, first(0), first(3), "batch %v", batch)
		assert.NotSame(t, first(0), first(4), "batch %v: another namespace", batch)
		assert.Equal(t, report.Targets[0].Releases[0].Key, report.Targets[4].Releases[0].Key)
	}
}
