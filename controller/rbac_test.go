package controller

import (
	"context"
	"os/exec"
	"path/filepath"
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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

const controllerUser = "system:serviceaccount:solar-system:solar-controller"

// TestControllerRBAC: config/controller applies as the docs say (kubectl
// apply -k config/controller/, a RoleBinding of solar-controller-tenant per
// served namespace). Acting as the controller's ServiceAccount on the real
// API server, the steps that made the old ClusterRole cluster-admin in two
// (read any namespace's Secrets; mint a token for flux-system's
// kustomize-controller, bound to cluster-admin) are each refused, and so are
// a token for a tenant's own ServiceAccount and a RoleBinding to
// cluster-admin. With those rights alone a controller still publishes every
// Target and mints the agents' credentials.
func TestControllerRBAC(t *testing.T) {
	e := startEnv(t)
	kubectl := func(args ...string) {
		t.Helper()
		out, err := exec.Command(testenv.Tool(t, "kubectl"), append([]string{"--kubeconfig", e.api.Kubeconfig}, args...)...).CombinedOutput()
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	}
	kubectl("apply", "-k", filepath.Join(testenv.Root(t), "config", "controller"))
	for _, ns := range []string{"alpha", "beta"} {
		kubectl("create", "rolebinding", "solar-controller", "-n", ns,
			"--clusterrole", "solar-controller-tenant", "--serviceaccount", "solar-system:solar-controller")
	}
	plantTargets(t, e.api.Client)

	as := impersonate(t, e.api.Config, controllerUser)
	assertEscalationsRefused(t, as)

	opts := e.options(t)
	opts.Config = rest.CopyConfig(e.api.Config)
	opts.Config.Impersonate = rest.ImpersonationConfig{UserName: controllerUser}
	opts.LeaderElection, opts.LeaderElectionNamespace = true, "solar-system"
	start(t, opts)
	e.waitReady(t, 2*time.Minute)
	for _, name := range []string{"edge-1", "edge-2"} {
		st, _ := e.targetStatusOf(t, "alpha", name)
		c := findCondition(st.Conditions, "AgentCredentialReady")
		require.NotNil(t, c, name)
		require.Equal(t, "Issued", c.Reason, "%s: %s", name, c.Message)
	}
}

// plantTargets makes what R1 took: flux-system's kustomize-controller bound
// to cluster-admin, a Secret in kube-system, and a tenant's own
// ServiceAccount and Role in alpha.
func plantTargets(t *testing.T, admin kubernetes.Interface) {
	ctx := context.Background()
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, sa := range [][2]string{{"flux-system", "kustomize-controller"}, {"alpha", "app"}} {
		_, err := admin.CoreV1().ServiceAccounts(sa[0]).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa[1]}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kustomize-controller"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "kustomize-controller", Namespace: "flux-system"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// A Role the controller could grant (it holds these rights in alpha):
	// only the admission policy keeps it from binding it.
	_, err = admin.RbacV1().Roles("alpha").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "other"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token"},
		StringData: map[string]string{"token": "not-for-solar"}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func impersonate(t *testing.T, cfg *rest.Config, user string) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	client, err := kubernetes.NewForConfig(c)
	require.NoError(t, err)
	return client
}

// assertEscalationsRefused runs R1's steps, and the tenant-side variants
// that only the admission policy refuses, as the controller.
func assertEscalationsRefused(t *testing.T, as kubernetes.Interface) {
	ctx := context.Background()
	_, err := as.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list secrets -A: %v", err)
	_, err = as.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list secrets -n kube-system: %v", err)
	_, err = as.CoreV1().ServiceAccounts("flux-system").CreateToken(ctx, "kustomize-controller", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "create token flux-system/kustomize-controller: %v", err)
	for _, review := range []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "secrets"},
		// The minter's informers watch Secrets per namespace it serves only.
		{Verb: "watch", Resource: "secrets"},
		{Verb: "watch", Resource: "secrets", Namespace: "kube-system"},
		{Verb: "get", Resource: "secrets", Namespace: "flux-system"},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "flux-system"},
		{Verb: "*", Group: "*", Resource: "*"},
	} {
		r, err := as.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &review}}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.False(t, r.Status.Allowed, "auth can-i %s %s/%s -n %q", review.Verb, review.Resource, review.Subresource, review.Namespace)
	}

	// In a namespace it serves, RBAC allows these; the admission policy
	// refuses them. A policy just created takes a moment to apply.
	tenant := []struct {
		what string
		do   func() error
	}{
		{"create token alpha/app", func() error {
			_, err := as.CoreV1().ServiceAccounts("alpha").CreateToken(ctx, "app", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		}},
		{"create serviceaccount alpha/admin", func() error {
			_, err := as.CoreV1().ServiceAccounts("alpha").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "admin"}}, metav1.CreateOptions{})
			return err
		}},
		{"create secret alpha/other", func() error {
			_, err := as.CoreV1().Secrets("alpha").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
			return err
		}},
		{"create rolebinding alpha/solar-agent-x to Role other", func() error {
			_, err := as.RbacV1().RoleBindings("alpha").Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "solar-agent-x"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "other"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: "alpha"}},
			}, metav1.CreateOptions{})
			return err
		}},
		{"create rolebinding alpha/solar-agent-x to cluster-admin", func() error {
			_, err := as.RbacV1().RoleBindings("alpha").Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "solar-agent-x"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: "alpha"}},
			}, metav1.CreateOptions{})
			return err
		}},
	}
	// A dry run passes admission too: it shows when the policy applies,
	// and makes nothing.
	require.Eventually(t, func() bool {
		_, err := as.CoreV1().Secrets("alpha").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe"}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err)
	}, 30*time.Second, 200*time.Millisecond, "the admission policy never applied")
	for _, step := range tenant {
		err := step.do()
		assert.True(t, apierrors.IsForbidden(err) || apierrors.IsInvalid(err), "%s: %v", step.what, err)
	}
}
