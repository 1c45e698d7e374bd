package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// TestReportArchive: the site's TargetReport, in the site's API server,
// exported as a signed report archive and imported on the connected side,
// turns solar status of its Target from Unknown to its real phases, marked
// as reported via the archive; the same archive again, one signed with
// another key and a tampered one are refused, the imported reports left as
// they were; no key is ever printed.
func TestReportArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	site := testenv.StartAPIServer(t)
	site.CreateNamespaces(t, "alpha")
	dir := t.TempDir()
	layout, into := filepath.Join(dir, "layout"), filepath.Join(dir, "reports")
	require.NoError(t, os.Mkdir(into, 0o700))
	code, stdout, stderr := solar(t, "render", "--no-credentials", "-o", "json", "--out", layout, "../../examples")
	require.Equal(t, 0, code, stderr)
	report := targetreport.Spec{LastReportTime: metav1.Now()}
	for _, tg := range decodeReport(t, stdout).Targets {
		if tg.Namespace != "alpha" || tg.Name != "edge-1" {
			continue
		}
		for _, rel := range tg.Releases {
			relNS, name, _ := strings.Cut(rel.Release, "/")
			report.Releases = append(report.Releases, targetreport.Release{Name: targetreport.ReleaseName("alpha", relNS, name),
				Namespace: "flux-system", Phase: targetreport.Ready, Revision: rel.Version + "+" + digest.Digest(rel.Digest).Encoded()[:12]})
		}
	}
	require.NotEmpty(t, report.Releases)
	runStatus := func() status.Target {
		t.Helper()
		code, stdout, stderr := solar(t, "status", "../../examples", "-n", "alpha", "--target", "edge-1", "--out", layout,
			"--reports", into, "-o", "json")
		require.Equal(t, 0, code, stderr)
		return decodeStatus(t, stdout)
	}
	st := runStatus()
	assert.Equal(t, status.Unknown, st.State, "nothing imported yet")

	writeReport(t, site, report)
	// What the object holds besides its spec stays on the site.
	dyn, err := dynamic.NewForConfig(site.Config)
	require.NoError(t, err)
	_, err = dyn.Resource(kube.TargetReportGVR).Namespace("alpha").Patch(context.Background(), "edge-1", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"example.com/token":"s3cr3t-t0ken"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	key, pub := writeKey(t, dir, "site")
	otherKey, _ := writeKey(t, dir, "other")
	archive := filepath.Join(dir, "reports.tar")
	code, stdout, stderr = solar(t, "export-reports", "--site", "north", "--signing-key", key, "--out", archive,
		"--kubeconfig", site.Kubeconfig, "-n", "alpha")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "alpha/edge-1\n", stdout)
	exportStderr := stderr
	code, stdout, stderr = solar(t, "import-reports", archive, "--key", pub, "--into", into)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "alpha/edge-1\n", stdout)

	st = runStatus()
	assert.Equal(t, status.Converged, st.State, st.Message)
	assert.Equal(t, "north", st.Site)
	require.NotNil(t, st.ExportedAt)
	assert.Contains(t, st.Message, "reported via the archive of site north, exported at "+st.ExportedAt.Format("2006-01-02T15:04:05Z"))
	for _, r := range st.Releases {
		assert.Equal(t, string(targetreport.Ready), r.Phase, r.Release)
	}
	imported, err := os.ReadFile(filepath.Join(into, "north.json"))
	require.NoError(t, err)
	carried, err := os.ReadFile(archive)
	require.NoError(t, err)
	assert.NotContains(t, string(carried), "s3cr3t-t0ken", "only the report's spec is carried")
	assert.NotContains(t, string(imported), "s3cr3t-t0ken")

	other := filepath.Join(dir, "other.tar")
	code, _, stderr = solar(t, "export-reports", "--site", "north", "--signing-key", otherKey, "--out", other, "--kubeconfig", site.Kubeconfig)
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile(archive)
	require.NoError(t, err)
	i := bytes.Index(b, []byte(`"phase":"Ready"`))
	require.Positive(t, i)
	b[i+len(`"phase":"`)] = 'X'
	tampered := filepath.Join(dir, "tampered.tar")
	require.NoError(t, os.WriteFile(tampered, b, 0o600))
	for file, want := range map[string]string{
		archive:  "a replay: this archive of site north",
		other:    "its signature: the signature does not verify with " + pub,
		tampered: "its content's sha256 is",
	} {
		code, stdout, stderr := solar(t, "import-reports", file, "--key", pub, "--into", into)
		assert.Equal(t, 1, code, file)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "report archive refused, nothing imported", file)
		assert.Contains(t, stderr, want, file)
		after, err := os.ReadFile(filepath.Join(into, "north.json"))
		require.NoError(t, err)
		assert.Equal(t, string(imported), string(after), "nothing written")
	}
	keyPEM, err := os.ReadFile(key)
	require.NoError(t, err)
	body := strings.Split(strings.TrimSpace(string(keyPEM)), "\n")[1] // the key itself, not its PEM header
	for _, out := range []string{string(imported), string(carried), exportStderr} {
		assert.NotContains(t, out, body, "the key is never written or printed")
	}
}
