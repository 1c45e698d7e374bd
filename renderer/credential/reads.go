package credential

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
)

// reads are what a sync checks before it writes: the API server itself
// (apiReads, solar publish), or a Cache (the controller), where an
// unchanged Target costs no request.
type reads interface {
	// serviceAccount reports whether the agent's ServiceAccount is known
	// to exist; false means "create it" (AlreadyExists is fine).
	serviceAccount(ctx context.Context, ns, name string) (bool, error)
	// report reports whether the Target's TargetReport is known to exist.
	report(ctx context.Context, ns, name string) (bool, error)
	// role and roleBinding are NotFound errors when absent.
	role(ctx context.Context, ns, name string) (*rbacv1.Role, error)
	roleBinding(ctx context.Context, ns, name string) (*rbacv1.RoleBinding, error)
	// secrets are the token Secrets of target, in any order.
	secrets(ctx context.Context, ns, target string) ([]corev1.Secret, error)
	// target is the Target (a NotFound error when absent).
	target(ctx context.Context, ns, name string) (*unstructured.Unstructured, error)
	// wrote and deleted tell a cache of the minter's own writes, before
	// its informers see them.
	wrote(obj runtime.Object)
	deleted(obj runtime.Object)
}

// apiReads read the API server on every sync: each unchanged Target costs
// a ServiceAccount create (AlreadyExists), a Role and a RoleBinding get, a
// TargetReport create (AlreadyExists), a Secret list and a Target get.
type apiReads struct{ m *Minter }

func (apiReads) serviceAccount(context.Context, string, string) (bool, error) { return false, nil }
func (apiReads) report(context.Context, string, string) (bool, error)         { return false, nil }
func (apiReads) wrote(runtime.Object)                                         {}
func (apiReads) deleted(runtime.Object)                                       {}

func (a apiReads) role(ctx context.Context, ns, name string) (*rbacv1.Role, error) {
	return a.m.client.RbacV1().Roles(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a apiReads) roleBinding(ctx context.Context, ns, name string) (*rbacv1.RoleBinding, error) {
	return a.m.client.RbacV1().RoleBindings(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a apiReads) secrets(ctx context.Context, ns, target string) ([]corev1.Secret, error) {
	list, err := a.m.client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: api.LabelAgentTokenFor + "=" + target})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func (a apiReads) target(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	return a.m.dyn.Resource(kube.TargetGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
}

// reads are the minter's: its Cache, else the API server.
func (m *Minter) reads() reads {
	if m.opts.Cache != nil {
		return m.opts.Cache
	}
	return apiReads{m}
}
