package credential

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	solarapi "github.com/solar-pipeline/solar/api"
	solarkube "github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/model"
)

// TestSyncLogic runs Sync under -short on client-go's in-memory clients,
// which answer a TokenRequest here with a numbered token: issue, keep,
// rotate before expiry, a dry run of a revoked Target, revoke. The tests
// beside it run the same against a real API server, which also checks what
// the fakes cannot (RBAC, the token's binding to its Secret).
func TestSyncLogic(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	minted := 0
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	kube.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		minted++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		tr.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("jwt-%d-payload", minted),
			ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
		return true, tr, nil
	})
	// The fake does not generate names: GenerateName gets a number here.
	generated := 0
	kube.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret)
		if s.Name == "" && s.GenerateName != "" {
			generated++
			s.Name = fmt.Sprintf("%s%d", s.GenerateName, generated)
		}
		return false, nil, nil // the tracker stores it
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		solarkube.TargetGVR: "TargetList", solarkube.TargetReportGVR: "TargetReportList",
	})
	m := &Minter{client: kube, dyn: dyn, ca: []byte("ca"), opts: Options{APIServerURL: "https://api.example.com", TTL: 24 * time.Hour,
		RotateBefore: 8 * time.Hour, Now: func() time.Time { return now }}}
	target := &model.Target{Meta: model.Meta{Name: "edge-1", Namespace: "alpha"}}
	tokens := func() []string {
		secrets, err := m.tokenSecrets(ctx, target)
		require.NoError(t, err)
		var out []string
		for _, s := range secrets {
			out = append(out, string(s.Data["token"]))
		}
		return out
	}

	c := m.Sync(ctx, target)
	require.Equal(t, solarapi.ReasonIssued, c.Reason, c.Message)
	assert.Contains(t, string(c.Kubeconfig), "jwt-1-payload")
	assert.NotContains(t, c.Message, "jwt-1-payload", "the message names a fingerprint, never the token")
	for _, get := range []func() error{
		func() error {
			_, err := kube.CoreV1().ServiceAccounts("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := kube.RbacV1().Roles("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := kube.RbacV1().RoleBindings("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := dyn.Resource(solarkube.TargetReportGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
			return err
		},
	} {
		assert.NoError(t, get())
	}
	assert.Equal(t, []string{"jwt-1-payload"}, tokens())

	assert.Equal(t, solarapi.ReasonIssued, m.Sync(ctx, target).Reason)
	assert.Equal(t, []string{"jwt-1-payload"}, tokens(), "16 h left: kept")

	now = now.Add(17 * time.Hour) // 7 h left, under RotateBefore
	c = m.Sync(ctx, target)
	require.Equal(t, solarapi.ReasonIssued, c.Reason, c.Message)
	assert.Contains(t, string(c.Kubeconfig), "jwt-2-payload")
	assert.Equal(t, []string{"jwt-1-payload", "jwt-2-payload"}, tokens(), "rotated; the old one stays until it expires")

	target.Annotations = map[string]string{solarapi.AnnotationAgentCredential: "revoked"}
	m.opts.ReadOnly = true
	assert.Equal(t, solarapi.ReasonRevoked, m.Sync(ctx, target).Reason)
	assert.Len(t, tokens(), 2, "a dry run deletes nothing")
	m.opts.ReadOnly = false
	assert.Equal(t, solarapi.ReasonRevoked, m.Sync(ctx, target).Reason)
	assert.Empty(t, tokens(), "revoked: every token Secret is gone")
}

// TestConditionKeepsTheRestOfTheStatus: the credential's condition is
// written beside what else the status holds (the controller's bootstrap
// chart and conditions), not over it.
func TestConditionKeepsTheRestOfTheStatus(t *testing.T) {
	ctx := context.Background()
	target := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "Target",
		"metadata": map[string]any{"name": "edge-1", "namespace": "alpha"},
		"status": map[string]any{
			"observedGeneration": int64(3),
			"bootstrap":          map[string]any{"repository": "alpha/bootstrap-edge-1", "version": "0.0.4", "digest": "sha256:x"},
			"conditions":         []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "", "lastTransitionTime": "2026-12-01T00:00:00Z"}},
		},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		solarkube.TargetGVR: "TargetList", solarkube.TargetReportGVR: "TargetReportList",
	}, target)
	m := &Minter{dyn: dyn, opts: Options{Now: time.Now}}
	require.NoError(t, m.writeCondition(ctx, &model.Target{Meta: model.Meta{Name: "edge-1", Namespace: "alpha"}},
		Credential{Status: metav1.ConditionTrue, Reason: solarapi.ReasonIssued, Message: "issued"}))
	got, err := dyn.Resource(solarkube.TargetGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	version, _, _ := unstructured.NestedString(got.Object, "status", "bootstrap", "version")
	assert.Equal(t, "0.0.4", version)
	generation, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
	assert.Equal(t, int64(3), generation)
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	assert.Len(t, conds, 2, "Ready kept, AgentCredentialReady added")
}
