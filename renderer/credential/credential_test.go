package credential

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/model"
)

type env struct {
	s   *testenv.APIServer
	dyn dynamic.Interface
}

func start(t *testing.T, namespaces ...string) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	s := testenv.StartAPIServer(t)
	dyn, err := dynamic.NewForConfig(s.Config)
	require.NoError(t, err)
	for _, ns := range namespaces {
		_, err := s.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return &env{s: s, dyn: dyn}
}

// target creates a Target in the API server and returns its model.
func (e *env) target(t *testing.T, ns, name string) *model.Target {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "Target",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"renderRegistryRef": map[string]any{"name": "render"}},
	}}
	_, err := e.dyn.Resource(kube.TargetGVR).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
	return &model.Target{Meta: model.Meta{Name: name, Namespace: ns}}
}

func (e *env) minter(t *testing.T, cfg *rest.Config, opts Options) *Minter {
	t.Helper()
	if opts.APIServerURL == "-" {
		opts.APIServerURL = ""
	} else if opts.APIServerURL == "" {
		opts.APIServerURL = e.s.URL
	}
	m, err := NewMinter(cfg, opts)
	require.NoError(t, err)
	return m
}

// condition reads AgentCredentialReady from the Target's status.
func (e *env) condition(t *testing.T, ns, name string) map[string]any {
	t.Helper()
	obj, err := e.dyn.Resource(kube.TargetGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == api.ConditionAgentCredentialReady {
			return m
		}
	}
	return nil
}

func (e *env) tokenSecrets(t *testing.T, ns, target string) []corev1.Secret {
	t.Helper()
	l, err := e.s.Client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: api.LabelAgentTokenFor + "=" + target})
	require.NoError(t, err)
	return l.Items
}

// agentClient is a dynamic client with the credential's kubeconfig.
func agentClient(t *testing.T, cred Credential) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(cred.Kubeconfig)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return dyn
}

func TestSyncIssuesAndIsIdempotent(t *testing.T) {
	e := start(t, "alpha")
	ctx := context.Background()
	tgt := e.target(t, "alpha", "edge-1")
	m := e.minter(t, e.s.Config, Options{TTL: time.Hour})
	dry := e.minter(t, e.s.Config, Options{TTL: time.Hour, ReadOnly: true})

	pending := dry.Sync(ctx, tgt)
	assert.Equal(t, api.ReasonPending, pending.Reason, "a dry run before the first sync")
	_, err := e.s.Client.CoreV1().ServiceAccounts("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a dry run creates nothing")
	assert.Nil(t, e.condition(t, "alpha", "edge-1"), "nor writes a condition")

	cred := m.Sync(ctx, tgt)
	require.Equal(t, api.ReasonIssued, cred.Reason, cred.Message)
	assert.Equal(t, metav1.ConditionTrue, cred.Status)
	peeked := dry.Sync(ctx, tgt)
	assert.Equal(t, cred.Message, peeked.Message, "a dry run after a sync sees the same credential")
	assert.Equal(t, Fingerprint(cred.Kubeconfig), Fingerprint(peeked.Kubeconfig))

	c := e.s.Client
	sa, err := c.CoreV1().ServiceAccounts("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	role, err := c.RbacV1().Roles("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"solar.opendefense.cloud"}, Resources: []string{"targets"}, ResourceNames: []string{"edge-1"}, Verbs: []string{"get", "watch"}},
		{APIGroups: []string{"solar.opendefense.cloud"}, Resources: []string{"targetreports"}, ResourceNames: []string{"edge-1"}, Verbs: []string{"get", "update", "patch"}},
	}, role.Rules)
	rb, err := c.RbacV1().RoleBindings("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "solar-agent-edge-1", Namespace: "alpha"}}, rb.Subjects)
	report, err := e.dyn.Resource(kube.TargetReportGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, report.Object["spec"], "the TargetReport starts empty")

	secrets := e.tokenSecrets(t, "alpha", "edge-1")
	require.Len(t, secrets, 1)
	token := secrets[0].Data["token"]
	require.NotEmpty(t, token)
	exp := expires(&secrets[0])
	assert.WithinDuration(t, time.Now().Add(time.Hour), exp, 2*time.Minute, "the granted expiry is read back")
	assert.False(t, strings.Contains(cred.Message, string(token)), "the token is never in a message")
	assert.Contains(t, cred.Message, "<redacted>")
	assert.Contains(t, cred.Message, Fingerprint(token))
	assert.Contains(t, cred.Message, "alpha/"+secrets[0].Name)
	cond := e.condition(t, "alpha", "edge-1")
	require.NotNil(t, cond)
	assert.Equal(t, "True", cond["status"])
	assert.Equal(t, api.ReasonIssued, cond["reason"])
	assert.Equal(t, cred.Message, cond["message"])

	// The kubeconfig reaches the API server as the agent.
	kc, err := clientcmd.Load(cred.Kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, e.s.URL, kc.Clusters["solar"].Server)

	target, err := e.dyn.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	again := m.Sync(ctx, tgt)
	assert.Equal(t, cred.Message, again.Message)
	assert.Equal(t, Fingerprint(cred.Kubeconfig), Fingerprint(again.Kubeconfig), "the same token")
	secrets2 := e.tokenSecrets(t, "alpha", "edge-1")
	require.Len(t, secrets2, 1)
	assert.Equal(t, secrets[0].ResourceVersion, secrets2[0].ResourceVersion, "no new token")
	sa2, _ := c.CoreV1().ServiceAccounts("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
	role2, _ := c.RbacV1().Roles("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
	rb2, _ := c.RbacV1().RoleBindings("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
	target2, _ := e.dyn.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
	assert.Equal(t, []string{sa.ResourceVersion, role.ResourceVersion, rb.ResourceVersion, target.GetResourceVersion()},
		[]string{sa2.ResourceVersion, role2.ResourceVersion, rb2.ResourceVersion, target2.GetResourceVersion()},
		"a second sync changes nothing")
}

func TestAccessMatrix(t *testing.T) {
	e := start(t, "alpha")
	ctx := context.Background()
	edge1, edge2 := e.target(t, "alpha", "edge-1"), e.target(t, "alpha", "edge-2")
	m := e.minter(t, e.s.Config, Options{TTL: time.Hour})
	cred := m.Sync(ctx, edge1)
	require.Equal(t, api.ReasonIssued, cred.Reason, cred.Message)
	require.Equal(t, api.ReasonIssued, m.Sync(ctx, edge2).Reason)
	agent := agentClient(t, cred)

	allowed := func(err error) string {
		switch {
		case err == nil:
			return "allowed"
		case apierrors.IsForbidden(err):
			return "forbidden"
		default:
			return err.Error()
		}
	}
	targets := agent.Resource(kube.TargetGVR).Namespace("alpha")
	reports := agent.Resource(kube.TargetReportGVR).Namespace("alpha")
	_, err := targets.Get(ctx, "edge-1", metav1.GetOptions{})
	assert.Equal(t, "allowed", allowed(err), "get own Target")
	_, err = targets.Get(ctx, "edge-2", metav1.GetOptions{})
	assert.Equal(t, "forbidden", allowed(err), "get another Target")

	own, err := reports.Get(ctx, "edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(own.Object, "2026-11-30T10:00:00Z", "spec", "lastReportTime"))
	_, err = reports.Update(ctx, own, metav1.UpdateOptions{})
	assert.Equal(t, "allowed", allowed(err), "update own TargetReport")

	other, err := e.dyn.Resource(kube.TargetReportGVR).Namespace("alpha").Get(ctx, "edge-2", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(other.Object, "2026-11-30T10:00:00Z", "spec", "lastReportTime"))
	_, err = reports.Update(ctx, other, metav1.UpdateOptions{})
	assert.Equal(t, "forbidden", allowed(err), "update another TargetReport")

	cfg, err := clientcmd.RESTConfigFromKubeConfig(cred.Kubeconfig)
	require.NoError(t, err)
	dynCore, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = dynCore.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace("alpha").List(ctx, metav1.ListOptions{})
	assert.Equal(t, "forbidden", allowed(err), "list Secrets")
	_, err = targets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "Target",
		"metadata": map[string]any{"name": "rogue"}, "spec": map[string]any{"renderRegistryRef": map[string]any{"name": "x"}},
	}}, metav1.CreateOptions{})
	assert.Equal(t, "forbidden", allowed(err), "create Targets")
}

func TestRevokeDisabledMintFailed(t *testing.T) {
	e := start(t, "alpha", "beta")
	ctx := context.Background()
	edge1, plant1 := e.target(t, "alpha", "edge-1"), e.target(t, "beta", "plant-1")

	// Disabled: no apiserverURL. Nothing is created, the condition says why.
	disabled := e.minter(t, e.s.Config, Options{APIServerURL: "-", TTL: time.Hour}).Sync(ctx, edge1)
	assert.Equal(t, api.ReasonDisabled, disabled.Reason)
	assert.Equal(t, "Disabled", e.condition(t, "alpha", "edge-1")["reason"])
	_, err := e.s.Client.CoreV1().ServiceAccounts("alpha").Get(ctx, "solar-agent-edge-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))

	// MintFailed: the pipeline's own identity may mint in alpha only.
	pipeline := e.pipelineIdentity(t, "alpha")
	m := e.minter(t, pipeline, Options{TTL: time.Hour})
	issued := m.Sync(ctx, edge1)
	require.Equal(t, api.ReasonIssued, issued.Reason, issued.Message)
	failed := m.Sync(ctx, plant1)
	assert.Equal(t, api.ReasonMintFailed, failed.Reason)
	assert.Contains(t, failed.Message, "forbidden")
	assert.Equal(t, "Issued", e.condition(t, "alpha", "edge-1")["reason"], "the other Target stays Issued")

	// Revoked: the token stops working at once and no new one is minted.
	agent := agentClient(t, issued)
	_, err = agent.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	edge1.Annotations = map[string]string{api.AnnotationAgentCredential: "revoked"}
	// A dry run of the revocation deletes nothing.
	dry := e.minter(t, pipeline, Options{TTL: time.Hour, ReadOnly: true}).Sync(ctx, edge1)
	assert.Equal(t, api.ReasonRevoked, dry.Reason)
	assert.Contains(t, dry.Message, "dry run")
	assert.NotEmpty(t, e.tokenSecrets(t, "alpha", "edge-1"), "a dry run deletes no token Secret")
	_, err = agent.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
	require.NoError(t, err, "the token still works after a dry run")
	revoked := m.Sync(ctx, edge1)
	assert.Equal(t, api.ReasonRevoked, revoked.Reason, revoked.Message)
	assert.Equal(t, "Revoked", e.condition(t, "alpha", "edge-1")["reason"])
	assert.Empty(t, e.tokenSecrets(t, "alpha", "edge-1"))
	assert.Eventually(t, func() bool {
		_, err := agent.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
		return apierrors.IsUnauthorized(err)
	}, 30*time.Second, 200*time.Millisecond, "the revoked token gets 401")
	assert.Equal(t, api.ReasonRevoked, m.Sync(ctx, edge1).Reason)
	assert.Empty(t, e.tokenSecrets(t, "alpha", "edge-1"), "revoked stays revoked")
}

// pipelineIdentity is a ServiceAccount that may mint credentials in the given
// namespaces only, as a rest.Config.
func (e *env) pipelineIdentity(t *testing.T, namespaces ...string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	c := e.s.Client
	_, err := c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pipeline"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "solar-pipeline"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts", "secrets"}, Verbs: []string{"*"}},
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"*"}},
			{APIGroups: []string{"solar.opendefense.cloud"}, Resources: []string{"targets", "targets/status", "targetreports"}, Verbs: []string{"*"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, ns := range namespaces {
		_, err = c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "solar-pipeline"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "solar-pipeline"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "pipeline", Namespace: "default"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	tr, err := c.CoreV1().ServiceAccounts("default").CreateToken(ctx, "pipeline", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(e.s.Config)
	cfg.BearerToken = tr.Status.Token
	// The API server authorizes from a cache of RoleBindings that follows
	// their creation a moment later: wait until it lets the identity in.
	as, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	for _, ns := range namespaces {
		require.Eventually(t, func() bool {
			r, err := as.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: "create", Resource: "serviceaccounts"}},
			}, metav1.CreateOptions{})
			return err == nil && r.Status.Allowed
		}, 30*time.Second, 50*time.Millisecond, "the pipeline identity may create ServiceAccounts in %s", ns)
	}
	return cfg
}

func TestRotation(t *testing.T) {
	e := start(t, "alpha")
	ctx := context.Background()
	tgt := e.target(t, "alpha", "edge-1")
	first := e.minter(t, e.s.Config, Options{TTL: time.Hour}).Sync(ctx, tgt)
	require.Equal(t, api.ReasonIssued, first.Reason, first.Message)
	old := e.tokenSecrets(t, "alpha", "edge-1")
	require.Len(t, old, 1)
	exp := expires(&old[0])

	// 41 minutes later less than a third of the hour is left: a new token.
	// (It gets two hours, so that it outlives the simulated clock below.)
	later := func() time.Time { return exp.Add(-19 * time.Minute) }
	rotated := e.minter(t, e.s.Config, Options{TTL: 2 * time.Hour, RotateBefore: 20 * time.Minute, Now: later}).Sync(ctx, tgt)
	require.Equal(t, api.ReasonIssued, rotated.Reason, rotated.Message)
	assert.NotEqual(t, Fingerprint(first.Kubeconfig), Fingerprint(rotated.Kubeconfig), "a new token")
	both := e.tokenSecrets(t, "alpha", "edge-1")
	require.Len(t, both, 2, "the old token stays until it expires")
	// The old token still works: the agent is not cut off before its new chart arrives.
	_, err := agentClient(t, first).Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
	require.NoError(t, err)

	// Once the old one expired, its Secret goes; the new one stays.
	after := func() time.Time { return exp.Add(time.Minute) }
	kept := e.minter(t, e.s.Config, Options{TTL: 2 * time.Hour, RotateBefore: 20 * time.Minute, Now: after}).Sync(ctx, tgt)
	assert.Equal(t, Fingerprint(rotated.Kubeconfig), Fingerprint(kept.Kubeconfig), "the new token is kept")
	left := e.tokenSecrets(t, "alpha", "edge-1")
	require.Len(t, left, 1)
	assert.NotEqual(t, old[0].Name, left[0].Name)
	assert.True(t, strings.HasPrefix(left[0].Name, "solar-agent-edge-1-token-"))
}

// TestDriftIsRepaired: a RoleBinding of the agent's name that somebody bound
// to cluster-admin (or to more subjects) is not trusted: sync makes it what it
// must be, and says so.
func TestDriftIsRepaired(t *testing.T) {
	e := start(t, "alpha")
	ctx := context.Background()
	edge1 := e.target(t, "alpha", "edge-1")
	name := Name("edge-1")
	_, err := e.s.Client.RbacV1().RoleBindings("alpha").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "alpha"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "alpha"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	m := e.minter(t, e.s.Config, Options{TTL: time.Hour})
	cred := m.Sync(ctx, edge1)
	require.Equal(t, api.ReasonIssued, cred.Reason, cred.Message)
	assert.Contains(t, cred.Message, "repaired: RoleBinding alpha/solar-agent-edge-1 was bound to ClusterRole cluster-admin")
	rb, err := e.s.Client.RbacV1().RoleBindings("alpha").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, rb.RoleRef)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(cred.Kubeconfig)
	require.NoError(t, err)
	core, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := core.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace("alpha").List(ctx, metav1.ListOptions{})
		return apierrors.IsForbidden(err)
	}, 10*time.Second, 200*time.Millisecond, "the agent is no cluster-admin")

	// More subjects than the agent: trimmed.
	rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "mallory", APIGroup: rbacv1.GroupName})
	_, err = e.s.Client.RbacV1().RoleBindings("alpha").Update(ctx, rb, metav1.UpdateOptions{})
	require.NoError(t, err)
	cred = m.Sync(ctx, edge1)
	assert.Contains(t, cred.Message, "repaired: RoleBinding alpha/solar-agent-edge-1 had other subjects")
	rb, err = e.s.Client.RbacV1().RoleBindings("alpha").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, rb.Subjects, 1)
	assert.NotContains(t, m.Sync(ctx, edge1).Message, "repaired", "nothing to repair the next time")

	// A Role that grants more than its own Target: its rules are put back.
	role, err := e.s.Client.RbacV1().Roles("alpha").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}})
	_, err = e.s.Client.RbacV1().Roles("alpha").Update(ctx, role, metav1.UpdateOptions{})
	require.NoError(t, err)
	cred = m.Sync(ctx, edge1)
	assert.Contains(t, cred.Message, "repaired: Role alpha/solar-agent-edge-1 had other rules")
	role, err = e.s.Client.RbacV1().Roles("alpha").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, role.Rules, 2, "its own Target and TargetReport, nothing else")
}
