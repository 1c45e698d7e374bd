package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The agent's own logic under -short, on client-go's in-memory dynamic
// client; TestAgent* run the same paths against a real API server.

func fakeAgent(t *testing.T, objs ...runtime.Object) (*agent, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.TargetGVR: "TargetList", kube.TargetReportGVR: "TargetReportList",
	}, objs...)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &agent{client: client, namespace: "alpha", target: "edge-1", log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
		now: func() time.Time { return now }, backoff: time.Millisecond}, client
}

func object(kind string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": "edge-1", "namespace": "alpha"}, "spec": map[string]any{},
	}}
}

func TestReportWritesTheTime(t *testing.T) {
	a, client := fakeAgent(t, object("Target"), object("TargetReport"))
	require.NoError(t, a.report(context.Background(), true))
	got, err := client.Resource(kube.TargetReportGVR).Namespace("alpha").Get(context.Background(), "edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	ts, _, _ := unstructured.NestedString(got.Object, "spec", "lastReportTime")
	assert.Equal(t, "2026-11-30T12:00:00Z", ts)
}

func TestReportExplainsRefusals(t *testing.T) {
	for code, want := range map[int]string{
		http.StatusUnauthorized: "refused this agent's token (401 Unauthorized): it was revoked or has expired",
		http.StatusForbidden:    "does not allow it (403 Forbidden): is --target this agent's own Target?",
	} {
		a, client := fakeAgent(t, object("Target"), object("TargetReport"))
		client.PrependReactor("get", "targets", func(k8stesting.Action) (bool, runtime.Object, error) {
			if code == http.StatusUnauthorized {
				return true, nil, apierrors.NewUnauthorized("token expired")
			}
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "targets"}, "edge-1", nil)
		})
		err := a.report(context.Background(), true)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "reading Target alpha/edge-1: ")
		assert.Contains(t, err.Error(), want)
	}
	a, _ := fakeAgent(t, object("Target"))
	assert.ErrorContains(t, a.report(context.Background(), true), "reading TargetReport alpha/edge-1", "a missing report is named")
}

func TestReadyzFollowsTheLastReport(t *testing.T) {
	a, _ := fakeAgent(t)
	srv := httptest.NewServer(a.health())
	defer srv.Close()
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("/healthz"))
	assert.Equal(t, http.StatusServiceUnavailable, get("/readyz"), "no report yet")
	a.ready.Store(true)
	assert.Equal(t, http.StatusOK, get("/readyz"))
}

func TestRunNeedsATarget(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, run(context.Background(), []string{"--once"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "--target is required")
}
