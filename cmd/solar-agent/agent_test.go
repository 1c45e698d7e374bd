package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/buildinfo"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/model"
)

// TestAgentReports mints edge-1's credential in a real API server, runs the
// agent with it twice, and points it at edge-2's report.
func TestAgentReports(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	s := testenv.StartAPIServer(t)
	ctx := context.Background()
	_, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(s.Config)
	require.NoError(t, err)
	m, err := credential.NewMinter(s.Config, credential.Options{APIServerURL: s.URL, TTL: time.Hour})
	require.NoError(t, err)
	var creds []credential.Credential
	for _, name := range []string{"edge-1", "edge-2"} {
		_, err := dyn.Resource(kube.TargetGVR).Namespace("alpha").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "Target",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"renderRegistryRef": map[string]any{"name": "render"}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		cred := m.Sync(ctx, &model.Target{Meta: model.Meta{Name: name, Namespace: "alpha"}})
		require.Equal(t, api.ReasonIssued, cred.Reason, cred.Message)
		creds = append(creds, cred)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, creds[0].Kubeconfig, 0o600))

	reportAs := func(target string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(ctx, []string{"--kubeconfig", kubeconfig, "--target", target, "--once"}, &out, &errOut)
		return code, errOut.String()
	}
	lastReport := func() string {
		r, err := dyn.Resource(kube.TargetReportGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
		require.NoError(t, err)
		v, _, _ := unstructured.NestedString(r.Object, "spec", "lastReportTime")
		return v
	}
	code, logs := reportAs("edge-1")
	require.Equal(t, 0, code, logs)
	first := lastReport()
	require.NotEmpty(t, first)
	code, logs = reportAs("edge-1")
	require.Equal(t, 0, code, logs)
	second := lastReport()
	t1, err := time.Parse(time.RFC3339Nano, first)
	require.NoError(t, err)
	t2, err := time.Parse(time.RFC3339Nano, second)
	require.NoError(t, err)
	assert.True(t, t2.After(t1), "lastReportTime advances: %s then %s", first, second)
	r, err := dyn.Resource(kube.TargetReportGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	v := r.GetAnnotations()[api.AnnotationAgentVersion]
	assert.Equal(t, buildinfo.Read().Version, v)
	assert.NotEmpty(t, v)

	code, logs = reportAs("edge-2")
	assert.Equal(t, 1, code)
	assert.Contains(t, logs, "403 Forbidden")
	assert.Contains(t, logs, "is --target this agent's own Target?")
	kc, err := clientcmd.Load(creds[0].Kubeconfig)
	require.NoError(t, err)
	for _, u := range kc.AuthInfos {
		assert.False(t, strings.Contains(logs, u.Token), "the token is never logged")
	}

	// The readiness probe of the agent chart: ready while reports go through.
	cfg, err := clientcmd.RESTConfigFromKubeConfig(creds[0].Kubeconfig)
	require.NoError(t, err)
	agentDyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	var buf testenv.LockedBuffer
	a := &agent{client: agentDyn, namespace: "alpha", target: "edge-1", now: time.Now, backoff: 50 * time.Millisecond,
		log: slog.New(slog.NewTextHandler(&buf, nil))}
	probe := httptest.NewServer(a.health())
	defer probe.Close()
	readyz := func() int {
		resp, err := http.Get(probe.URL + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusServiceUnavailable, readyz(), "not ready before the first report")
	stop := loopUntil(ctx, a, time.Minute)
	require.Eventually(t, func() bool { return readyz() == http.StatusOK }, 20*time.Second, 20*time.Millisecond,
		"ready after a report went through")
	stop()

	// Revoked: the loop says why and retries with growing waits until stopped.
	require.NoError(t, s.Client.CoreV1().Secrets("alpha").DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "solar.opendefense.cloud/agent-token-for=edge-1"}))
	// The API server caches token checks for a few seconds.
	require.Eventually(t, func() bool {
		_, err := agentDyn.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
		return apierrors.IsUnauthorized(err)
	}, 30*time.Second, 200*time.Millisecond, "the deleted Secret's token is refused")
	stop = loopUntil(ctx, a, 400*time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), "retry=400ms") }, 20*time.Second,
		20*time.Millisecond, "the wait grows up to the interval: %s", &buf)
	stop()
	out := buf.String()
	failures := strings.Count(out, "401 Unauthorized")
	assert.GreaterOrEqual(t, failures, 3, "it keeps retrying")
	assert.Contains(t, out, "it was revoked or has expired")
	assert.Contains(t, out, "retry=50ms", "the first wait is the backoff")
	assert.Contains(t, out, "retry=400ms", "the wait grows up to the interval")
	assert.Equal(t, http.StatusServiceUnavailable, readyz(), "not ready while reports fail")
}

// loopUntil runs the agent's loop at interval until the returned stop is
// called, which waits for the loop to return: a test waits for what it
// looks for, not a fixed time that a slow machine may not keep.
func loopUntil(ctx context.Context, a *agent, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.loop(ctx, interval)
	}()
	return func() {
		cancel()
		<-done
	}
}
