package main

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// fluxPair creates an OCIRepository and a HelmRelease of name in
// flux-system; a bootstrap chart's (app set) names the application pair in
// its values and carries the Target's label.
func fluxPair(t *testing.T, dyn dynamic.Interface, name, target, app string) {
	t.Helper()
	for _, gvr := range []schema.GroupVersionResource{testenv.OCIRepositoryGVR, testenv.HelmReleaseGVR} {
		labels := map[string]any{api.LabelRelease: "apps.web"}
		if target != "" {
			labels[api.LabelTarget] = target
		}
		spec := map[string]any{"interval": "1m", "url": "oci://registry.example/x", "ref": map[string]any{"tag": "0.0.1"}}
		kind, apiVersion := "OCIRepository", "source.toolkit.fluxcd.io/v1"
		if gvr == testenv.HelmReleaseGVR {
			kind, apiVersion = "HelmRelease", "helm.toolkit.fluxcd.io/v2"
			spec = map[string]any{"interval": "1m", "chartRef": map[string]any{"kind": "OCIRepository", "name": name}}
			if app != "" {
				spec["values"] = map[string]any{"names": map[string]any{"app": map[string]any{"name": app, "full": app}}}
			}
		}
		_, err := dyn.Resource(gvr).Namespace("flux-system").Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "labels": labels, "annotations": map[string]any{api.AnnotationRelease: "alpha/web"}},
			"spec":     spec,
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// setStatus writes a status onto a Flux object, as its controller would:
// conditions {type, status, reason, message} about its current generation.
func setStatus(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, name string, history string, conds ...[4]string) {
	t.Helper()
	ctx := context.Background()
	o, err := dyn.Resource(gvr).Namespace("flux-system").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	var cs []any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": c[2], "message": c[3],
			"observedGeneration": o.GetGeneration(), "lastTransitionTime": "2026-12-01T10:00:00Z"})
	}
	status := map[string]any{"observedGeneration": o.GetGeneration(), "conditions": cs}
	if history != "" {
		status["history"] = []any{map[string]any{"chartVersion": history, "chartName": "x", "digest": "sha256:00",
			"name": name, "namespace": "flux-system", "version": int64(1), "status": "deployed",
			"firstDeployed": "2026-12-01T10:00:00Z", "lastDeployed": "2026-12-01T10:00:00Z", "configDigest": "sha256:00"}}
	}
	o.Object["status"] = status
	_, err = dyn.Resource(gvr).Namespace("flux-system").UpdateStatus(ctx, o, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// TestAgentReportsFlux: the agent, with the credential solar mints, reports
// what the Flux objects of its cluster say, in a real API server: writes
// on change and at the heartbeat only; Progressing, Ready, then Failed with
// helm-controller's message.
func TestAgentReportsFlux(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	s := testenv.StartAPIServer(t)
	testenv.InstallFluxCRDs(t, s)
	ctx := context.Background()
	for _, ns := range []string{"alpha", "flux-system"} {
		_, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	dyn, err := dynamic.NewForConfig(s.Config)
	require.NoError(t, err)
	_, err = dyn.Resource(kube.TargetGVR).Namespace("alpha").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "Target", "metadata": map[string]any{"name": "edge-1"},
		"spec": map[string]any{"renderRegistryRef": map[string]any{"name": "render"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	m, err := credential.NewMinter(s.Config, credential.Options{APIServerURL: s.URL, TTL: time.Hour})
	require.NoError(t, err)
	cred := m.Sync(ctx, &model.Target{Meta: model.Meta{Name: "edge-1", Namespace: "alpha"}})
	require.Equal(t, api.ReasonIssued, cred.Reason, cred.Message)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(cred.Kubeconfig)
	require.NoError(t, err)
	agentDyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)

	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	a := &agent{client: agentDyn, cluster: dyn, namespace: "alpha", target: "edge-1", maxAge: 10 * time.Minute,
		now: func() time.Time { return now }, log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
	report := func() (targetreport.Spec, string) {
		require.NoError(t, a.report(ctx, false))
		r, err := dyn.Resource(kube.TargetReportGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
		require.NoError(t, err)
		return targetreport.Decode(r.Object), r.GetResourceVersion()
	}

	fluxPair(t, dyn, "edge-1-web", "edge-1", "edge-1-web-app")
	fluxPair(t, dyn, "edge-2-web", "edge-2", "edge-2-web-app") // another Target's, on the same API server
	spec, rv := report()
	require.Len(t, spec.Releases, 1)
	assert.Equal(t, targetreport.Release{Name: "web", Namespace: "flux-system", Phase: targetreport.Progressing}, spec.Releases[0])
	assert.Equal(t, []targetreport.Check{{Type: "FluxReadable", Status: "True", Reason: "Listed"}}, spec.Preflight.Checks)

	// Unchanged: no write, however often the agent looks, until the
	// report is --max-age old.
	for range 3 {
		now = now.Add(time.Minute)
		_, again := report()
		assert.Equal(t, rv, again, "an unchanged cluster writes nothing")
	}
	assert.Equal(t, int64(1), a.writes.Load())
	now = now.Add(7 * time.Minute)
	heartbeat, rv2 := report()
	assert.NotEqual(t, rv, rv2, "the heartbeat writes")
	assert.Equal(t, now, heartbeat.LastReportTime.Time.UTC())

	// The release chart installed, then the application.
	setStatus(t, dyn, testenv.OCIRepositoryGVR, "edge-1-web", "", [4]string{"Ready", "True", "Succeeded", "stored artifact"})
	// The conditions and versions are what helm-controller writes
	// (internal/testkit/helmdriver/testdata/helm-controller).
	setStatus(t, dyn, testenv.HelmReleaseGVR, "edge-1-web", "0.0.3+68ee5879e98f", [4]string{"Ready", "True", "TestSucceeded",
		"Helm test succeeded for release flux-system/edge-1-web.v1 with chart web@0.0.3+68ee5879e98f: no test hooks"})
	fluxPair(t, dyn, "edge-1-web-app", "", "")
	setStatus(t, dyn, testenv.OCIRepositoryGVR, "edge-1-web-app", "", [4]string{"Ready", "True", "Succeeded", "stored artifact"})
	setStatus(t, dyn, testenv.HelmReleaseGVR, "edge-1-web-app", "1.2.3",
		[4]string{"Ready", "Unknown", "Progressing", "Fulfilling prerequisites"}, [4]string{"Reconciling", "True", "Progressing", "Running 'install'"})
	spec, _ = report()
	assert.Equal(t, targetreport.Progressing, spec.Releases[0].Phase)
	assert.Equal(t, "0.0.3+68ee5879e98f", spec.Releases[0].Revision, "the release chart version live, as helm-controller writes it")
	setStatus(t, dyn, testenv.HelmReleaseGVR, "edge-1-web-app", "1.2.3+49127895d5fc", [4]string{"Ready", "True", "TestSucceeded",
		"Helm test succeeded for release web/web-edge-1-web-app.v1 with chart web@1.2.3+49127895d5fc: no test hooks"})
	spec, _ = report()
	assert.Equal(t, targetreport.Ready, spec.Releases[0].Phase)

	const failed = "Helm upgrade failed for release web/web-edge-1-web-app with chart web@1.2.4+1a2b3c4d5e6f: timeout waiting for: [Deployment/web/web-edge-1-web-app status: 'InProgress']"
	setStatus(t, dyn, testenv.HelmReleaseGVR, "edge-1-web-app", "1.2.3+49127895d5fc",
		[4]string{"Ready", "False", "UpgradeFailed", failed}, [4]string{"Stalled", "True", "RetriesExceeded", "Failed to upgrade after 4 attempt(s)"})
	spec, _ = report()
	assert.Equal(t, targetreport.Failed, spec.Releases[0].Phase)
	assert.Equal(t, failed, spec.Releases[0].HelmConditions[0].Message, "helm-controller's message, verbatim")
	assert.Equal(t, int64(5), a.writes.Load(), "writes: the first, the heartbeat, then three changes")

	// The kubeconfig solar mints reads nothing of the cluster: the agent
	// reaches Flux with the cluster's own credentials only.
	_, err = agentDyn.Resource(testenv.HelmReleaseGVR).Namespace("flux-system").List(ctx, metav1.ListOptions{})
	assert.Error(t, err)
}
