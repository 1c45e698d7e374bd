package credential

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/model"
)

// ensureRBAC makes the agent's ServiceAccount, Role and RoleBinding what they
// must be, whatever was there before: a RoleBinding of that name bound to
// another role (cluster-admin) or to other subjects is recreated or fixed, not
// trusted. It returns what it repaired, for the condition's message.
func (m *Minter) ensureRBAC(ctx context.Context, t *model.Target) ([]string, error) {
	ns, name := t.Namespace, Name(t.Name)
	labels := map[string]string{api.LabelAgentTokenFor: t.Name}
	var repaired []string
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	if _, err := m.client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating ServiceAccount %s/%s: %w", ns, name, err)
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{api.Group}, Resources: []string{"targets"}, ResourceNames: []string{t.Name}, Verbs: []string{"get", "watch"}},
		{APIGroups: []string{api.Group}, Resources: []string{"targetreports"}, ResourceNames: []string{t.Name}, Verbs: []string{"get", "update", "patch"}},
	}
	roles := m.client.RbacV1().Roles(ns)
	role, err := roles.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		role = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Rules: rules}
		if _, err := roles.Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating Role %s/%s: %w", ns, name, err)
		}
	case err != nil:
		return nil, fmt.Errorf("reading Role %s/%s: %w", ns, name, err)
	case !equalRules(role.Rules, rules):
		role.Rules = rules
		if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("updating Role %s/%s: %w", ns, name, err)
		}
		repaired = append(repaired, fmt.Sprintf("Role %s/%s had other rules", ns, name))
	}

	want := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}
	bindings := m.client.RbacV1().RoleBindings(ns)
	rb, err := bindings.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := bindings.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating RoleBinding %s/%s: %w", ns, name, err)
		}
	case err != nil:
		return nil, fmt.Errorf("reading RoleBinding %s/%s: %w", ns, name, err)
	case rb.RoleRef != want.RoleRef:
		// roleRef cannot change: the binding is made anew.
		if err := bindings.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting RoleBinding %s/%s: %w", ns, name, err)
		}
		if _, err := bindings.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("recreating RoleBinding %s/%s: %w", ns, name, err)
		}
		repaired = append(repaired, fmt.Sprintf("RoleBinding %s/%s was bound to %s %s", ns, name, rb.RoleRef.Kind, rb.RoleRef.Name))
	case !slices.Equal(rb.Subjects, want.Subjects):
		rb.Subjects = want.Subjects
		if _, err := bindings.Update(ctx, rb, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("updating RoleBinding %s/%s: %w", ns, name, err)
		}
		repaired = append(repaired, fmt.Sprintf("RoleBinding %s/%s had other subjects", ns, name))
	}
	return repaired, nil
}
