package ui

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/sitereport"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// TestImportedReportsShown (issue 52, the way back): with the folder of
// solar import-reports, a Target an air-gapped site reported has its
// state from the imported archive, marked with the site and when the
// archive left it; an import while the UI runs is seen at its next
// refresh. Without the folder the same Target has no report.
func TestImportedReportsShown(t *testing.T) {
	l := publishSigned(t, newSigningKey(t))
	e := startUI(t, nil)
	e.create(t, api.KindTarget, "alpha", "edge-1", map[string]any{"renderRegistryRef": map[string]any{"name": "r"}})
	dir := filepath.Join(t.TempDir(), "reports")
	require.NoError(t, os.Mkdir(dir, 0o700))
	refresh := 200 * time.Millisecond
	live, err := sitereport.NewLive(dir, refresh)
	require.NoError(t, err)
	s, alice := startUIOn(t, e, Options{Store: l, Refresh: refresh, ImportedReports: live.Report})
	assert.Contains(t, getPage(t, s, alice, "/targets/alpha/edge-1"), "no TargetReport")

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	k, err := sign.NewKey(priv)
	require.NoError(t, err)
	v, err := sign.NewVerifier(k.PublicPEM())
	require.NoError(t, err)
	exported := time.Now().UTC().Truncate(time.Second)
	report := sitereport.Report{APIVersion: api.APIVersion, Kind: api.KindTargetReport,
		Metadata: sitereport.Metadata{Namespace: "alpha", Name: "edge-1"},
		Spec:     targetreport.Spec{LastReportTime: metav1.NewTime(exported.Add(-time.Minute))}}
	file := filepath.Join(t.TempDir(), "north.tar")
	_, err = sitereport.Export(context.Background(), sitereport.Contents{Reports: []sitereport.Report{report}}, "north", k, exported, file)
	require.NoError(t, err)
	_, err = sitereport.Import(context.Background(), file, v, dir, exported)
	require.NoError(t, err)

	want := "reported via the archive of site north, exported at " + exported.Format(time.RFC3339)
	assert.Eventually(t, func() bool {
		return strings.Contains(getPage(t, s, alice, "/targets/alpha/edge-1"), want)
	}, 30*time.Second, 100*time.Millisecond, "the import is shown at the next refresh")

	plain, alice := startUIOn(t, e, Options{Store: l, Refresh: refresh})
	assert.NotContains(t, getPage(t, plain, alice, "/targets/alpha/edge-1"), "site north", "without the folder: the API server's reports only")
}
