package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
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
	assert.Regexp(t, `alpha/solar-index:0\.0\.\d+: alpha/alpha/release-podinfo-stable: the index names 0.0.2, but the newest version is 0.0.1`, stdout)
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

// TestGCKeepsTheNewestIndex: every index write is a version of the index's
// repository; gc removes all but the newest (whatever --keep says of the
// charts), and never the one the tag index names (what older solar versions
// read), here moved back by hand. The next run still trusts the index.
func TestGCKeepsTheNewestIndex(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	out := filepath.Join(dir, "out")
	render := func() {
		t.Helper()
		code, _, stderr := solar(t, "render", "--no-credentials", "-n", "alpha", "--out", out, examples)
		require.Equal(t, 0, code, stderr)
	}
	render()
	st := replayStore{open: func(t *testing.T) (store.Store, func()) {
		l, err := store.OpenLayout(context.Background(), out, store.LayoutOptions{})
		require.NoError(t, err)
		return l, func() { require.NoError(t, l.Save(context.Background())); require.NoError(t, l.Close()) }
	}}
	v1 := indexManifest(t, st)
	changeRelease(t, examples, "2", "3")
	render()
	newest := newestIndex(t, out)
	require.NotEqual(t, "0.0.1", newest, "each write a version")
	replayIndex(t, st, v1, func(string) string { return publish.IndexTag })

	code, stdout, stderr := solar(t, "gc", "--out", out, "--keep", "5", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var res store.GCResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.Empty(t, res.Versions, "every chart version kept")
	ctx := context.Background()
	l := mustLayout(t, out)
	repo, err := l.Repository(ctx, publish.IndexRepository("alpha"))
	require.NoError(t, err)
	tags, err := store.Tags(ctx, repo)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	assert.ElementsMatch(t, []string{"0.0.1", newest, publish.IndexTag}, tags, "the newest, and what the tag index names")
	n, err := strconv.Atoi(strings.TrimPrefix(newest, "0.0."))
	require.NoError(t, err)
	assert.Equal(t, n-2, res.Indexes, "the others removed, and counted apart from the charts' versions")

	code, stdout, stderr = solar(t, "verify", "--out", out)
	assert.Equal(t, 0, code, "%s%s", stdout, stderr)
	code, stdout, stderr = solar(t, "render", "--no-credentials", "-n", "alpha", "-v", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "left aside")
}

// newestIndex is the highest version of alpha's index in the layout out.
func newestIndex(t *testing.T, out string) string {
	t.Helper()
	ctx := context.Background()
	l := mustLayout(t, out)
	defer l.Close()
	repo, err := l.Repository(ctx, publish.IndexRepository("alpha"))
	require.NoError(t, err)
	v, err := publish.Newest(ctx, repo)
	require.NoError(t, err)
	return v
}
