package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// TestFullRepairsARolledBackRepository: a release chart's repository put
// back by hand to an older state (0.0.1, while the index names 0.0.2), with
// the input back to that content, is found unchanged at 0.0.1 by a --full
// run, which writes that into the index although it is the lower version
// (a run that trusts no index removes the entries of every repository it
// asks before it pushes): verify then passes, and the next run, trusting the
// index, names 0.0.1, which exists.
func TestFullRepairsARolledBackRepository(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	out := filepath.Join(dir, "out")
	// A release chart's content does not name other versions.
	repo := filepath.Join(out, "alpha", "alpha", "release-podinfo-stable")
	render := func(args ...string) pipeline.Report {
		t.Helper()
		code, stdout, stderr := solar(t, append([]string{"render", "--no-credentials", "-n", "alpha", "-o", "json", "--out", out}, append(args, examples)...)...)
		require.Equal(t, 0, code, stderr)
		return decodeReport(t, stdout)
	}
	render()
	backup := filepath.Join(dir, "backup")
	require.NoError(t, os.CopyFS(backup, os.DirFS(repo)))
	changeRelease(t, examples, "2", "3")
	render() // alpha/alpha/release-podinfo-stable 0.0.2
	require.NoError(t, os.RemoveAll(repo))
	require.NoError(t, os.CopyFS(repo, os.DirFS(backup)), "put back by hand")
	changeRelease(t, examples, "3", "2")

	// verify also says that the bootstrap chart's 0.0.2 names a release
	// version no longer there: the rollback's doing, not the index's.
	_, stdout, _ := solar(t, "verify", "--out", out)
	assert.Contains(t, stdout, "alpha/solar-index:index: alpha/alpha/release-podinfo-stable: the index names 0.0.2, but the newest version is 0.0.1")
	render("--full")
	_, stdout, _ = solar(t, "verify", "--out", out)
	assert.NotContains(t, stdout, "solar-index", "the index names what --full found")
	for _, tr := range render().Targets {
		assert.Equal(t, "unchanged", tr.Action, tr.Name)
		for _, rel := range tr.Releases {
			if rel.Repository == "alpha/alpha/release-podinfo-stable" {
				assert.Equal(t, "0.0.1", rel.Version, "the version the repository has")
			}
		}
	}
}
