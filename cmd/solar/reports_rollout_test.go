package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/rollout"
)

// TestReportArchiveGatesRollout: on the connected side, with no API server
// the site's agents report to, a rollout's canary passes once the site's
// report archive, saying it is Ready, is imported (render --reports), and
// not before.
func TestReportArchiveGatesRollout(t *testing.T) {
	e := newRolloutEnv(t) // e.api is the site's API server
	dir := t.TempDir()
	into := filepath.Join(dir, "reports")
	require.NoError(t, os.Mkdir(into, 0o700))
	render := func(args ...string) (int, string, string) {
		return solar(t, append([]string{"render", "-o", "json", "--no-credentials", "--out", e.layout}, append(args, e.input)...)...)
	}
	renderVia := func() pipeline.Report {
		t.Helper()
		code, stdout, stderr := render("--reports", into)
		require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
		return decodeReport(t, stdout)
	}
	rolloutInput(t, e.input, 1, "")
	renderVia()
	rolloutInput(t, e.input, 2, testenv.ThreeWaves("10m", "Halt"))
	r := renderVia()
	assert.Equal(t, []string{"t01"}, members(r)[rollout.Admitted], "the canary only")
	code, _, stderr := render()
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "pass --kubeconfig, the SolAr API server the agents report to (or --reports, those imported from a site)")
	r = renderVia()
	assert.Equal(t, []string{"t01"}, members(r)[rollout.Admitted], "nothing passes without its report")

	e.reportReady(r, "t01")
	key, pub := writeKey(t, dir, "site")
	archive := filepath.Join(dir, "reports.tar")
	code, _, stderr = solar(t, "export-reports", "--site", "north", "--signing-key", key, "--out", archive, "--kubeconfig", e.api.Kubeconfig)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = solar(t, "import-reports", archive, "--key", pub, "--into", into)
	require.Equal(t, 0, code, stderr)
	r = renderVia()
	assert.Equal(t, []string{"t01"}, members(r)[rollout.Passed], "the canary's report came through the archive")
	assert.Equal(t, []string{"t02", "t03", "t04", "t05"}, members(r)[rollout.Admitted])
}
