package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// TestStatusComparesArtifactDigests: a TargetReport with the versions
// helm-controller writes (the chart version, + the first 12 hex digits of
// the manifest digest it pulled) is Converged when they are the digests
// solar published, and Progressing, saying so, when one release runs its
// published version from another artifact.
func TestStatusComparesArtifactDigests(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	api := testenv.StartAPIServer(t)
	api.CreateNamespaces(t, "alpha")
	layout := filepath.Join(t.TempDir(), "layout")
	code, stdout, stderr := solar(t, "render", "--no-credentials", "-o", "json", "--out", layout, "../../examples")
	require.Equal(t, 0, code, stderr)
	var published []pipeline.ReleaseReport
	for _, tg := range decodeReport(t, stdout).Targets {
		if tg.Namespace == "alpha" && tg.Name == "edge-1" {
			published = tg.Releases
		}
	}
	require.NotEmpty(t, published)
	suffixed := map[string]string{} // release: what helm-controller reports
	report := targetreport.Spec{LastReportTime: metav1.Now()}
	for _, rel := range published {
		suffixed[rel.Release] = rel.Version + "+" + digest.Digest(rel.Digest).Encoded()[:12]
		relNS, name, _ := strings.Cut(rel.Release, "/")
		report.Releases = append(report.Releases, targetreport.Release{Name: targetreport.ReleaseName("alpha", relNS, name),
			Namespace: "flux-system", Phase: targetreport.Ready, Revision: suffixed[rel.Release]})
	}
	writeReport(t, api, report)
	runStatus := func(args ...string) (int, string, string) {
		return solar(t, append([]string{"status", "../../examples", "-n", "alpha", "--target", "edge-1", "--out", layout,
			"--kubeconfig", api.Kubeconfig, "--exit-code"}, args...)...)
	}

	code, stdout, stderr = runStatus("-o", "json")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	st := decodeStatus(t, stdout)
	assert.Equal(t, status.Converged, st.State, st.Message)
	require.Len(t, st.Releases, len(published))
	for i, rel := range published {
		assert.Equal(t, rel.Release, st.Releases[i].Release)
		assert.Equal(t, rel.Digest, st.Releases[i].DesiredDigest, "the manifest solar pushed")
		assert.Equal(t, suffixed[rel.Release], st.Releases[i].Reported, "what the cluster reported, as it is")
		assert.Equal(t, digest.Digest(rel.Digest).Encoded()[:12], st.Releases[i].ReportedDigest)
	}

	code, stdout, stderr = runStatus("--no-headers")
	assert.Equal(t, 0, code, stderr)
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		assert.Regexp(t, `^alpha +edge-1 +Converged +0\.0\.1 +\S+ +alpha/\S+ +0\.0\.1 +0\.0\.1\+[0-9a-f]{12} +Ready +-$`, line, "RUNNING as reported, no message")
	}

	// The first release's tag moved to another manifest after the cluster
	// pulled it: same version, another artifact.
	rel := published[0]
	report.Releases[0].Revision = rel.Version + "+0123456789ab"
	report.LastReportTime = metav1.Now()
	writeReport(t, api, report)
	want := "runs " + rel.Version + " from artifact sha256:0123456789ab…, published is sha256:" + digest.Digest(rel.Digest).Encoded()[:12] + "…"
	code, stdout, stderr = runStatus("-o", "json")
	assert.Equal(t, 2, code, "%s\n%s", stdout, stderr)
	st = decodeStatus(t, stdout)
	assert.Equal(t, status.Progressing, st.State)
	assert.Contains(t, st.Message, rel.Release+": "+want)
	assert.Equal(t, "0123456789ab", st.Releases[0].ReportedDigest)
	assert.Contains(t, st.Releases[0].Message, want)

	code, stdout, stderr = runStatus("--no-headers")
	assert.Equal(t, 2, code, stderr)
	line := strings.Split(stdout, "\n")[0]
	assert.Contains(t, line, rel.Version+"+0123456789ab", "RUNNING is what the cluster reported")
	assert.Contains(t, line, want, "the table says which artifact runs")
}

// writeReport creates or replaces the TargetReport of alpha/edge-1.
func writeReport(t *testing.T, api *testenv.APIServer, spec targetreport.Spec) {
	t.Helper()
	ctx := context.Background()
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(b, &obj))
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	reports := dyn.Resource(kube.TargetReportGVR).Namespace("alpha")
	u, err := reports.Get(ctx, "edge-1", metav1.GetOptions{})
	if err != nil {
		u = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "TargetReport",
			"metadata": map[string]any{"name": "edge-1", "namespace": "alpha"}, "spec": obj}}
		_, err = reports.Create(ctx, u, metav1.CreateOptions{})
	} else {
		u.Object["spec"] = obj
		_, err = reports.Update(ctx, u, metav1.UpdateOptions{})
	}
	require.NoError(t, err)
}

// decodeStatus is the one Target of solar status -o json.
func decodeStatus(t *testing.T, stdout string) status.Target {
	t.Helper()
	var doc struct{ Targets []status.Target }
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Len(t, doc.Targets, 1, stdout)
	return doc.Targets[0]
}
