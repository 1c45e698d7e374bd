package credential

import (
	"context"
	"fmt"
	"maps"
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
// trusted. It returns what it repaired, for the condition's message. What
// is already right is read, not written (from the Cache, no request).
func (m *Minter) ensureRBAC(ctx context.Context, t *model.Target) ([]string, error) {
	ns, name := t.Namespace, Name(t.Name)
	labels := map[string]string{api.LabelAgentTokenFor: t.Name}
	rd := m.reads()
	exists, err := rd.serviceAccount(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if !exists {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
		created, err := m.client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		switch {
		case err == nil:
			rd.wrote(created)
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("creating ServiceAccount %s/%s: %w", ns, name, err)
		}
	}
	var repaired []string
	fixed, err := m.ensureRole(ctx, ns, name, t.Name, labels)
	if err != nil {
		return nil, err
	}
	repaired = append(repaired, fixed...)
	fixed, err = m.ensureRoleBinding(ctx, ns, name, labels)
	return append(repaired, fixed...), err
}

// agentRules are what an agent may do: read its own Target, read and
// update its own TargetReport.
func agentRules(target string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{api.Group}, Resources: []string{"targets"}, ResourceNames: []string{target}, Verbs: []string{"get", "watch"}},
		{APIGroups: []string{api.Group}, Resources: []string{"targetreports"}, ResourceNames: []string{target}, Verbs: []string{"get", "update", "patch"}},
	}
}

// ensureRole creates the agent's Role or sets its rules (and labels).
func (m *Minter) ensureRole(ctx context.Context, ns, name, target string, labels map[string]string) ([]string, error) {
	rules := agentRules(target)
	roles, rd := m.client.RbacV1().Roles(ns), m.reads()
	role, err := rd.role(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		want := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Rules: rules}
		created, cerr := roles.Create(ctx, want, metav1.CreateOptions{})
		if cerr == nil {
			rd.wrote(created)
			return nil, nil
		}
		if !apierrors.IsAlreadyExists(cerr) {
			return nil, fmt.Errorf("creating Role %s/%s: %w", ns, name, cerr)
		}
		// There, without the label a cache selects: read it.
		role, err = roles.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("reading Role %s/%s: %w", ns, name, err)
	}
	if equalRules(role.Rules, rules) && hasLabels(role.Labels, labels) {
		return nil, nil
	}
	role = role.DeepCopy()
	var repaired []string
	if !equalRules(role.Rules, rules) {
		repaired = append(repaired, fmt.Sprintf("Role %s/%s had other rules", ns, name))
	}
	role.Rules, role.Labels = rules, withLabels(role.Labels, labels)
	updated, err := roles.Update(ctx, role, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating Role %s/%s: %w", ns, name, err)
	}
	rd.wrote(updated)
	return repaired, nil
}

// ensureRoleBinding creates the agent's RoleBinding, makes it anew when it
// is bound to another role, or sets its subjects (and labels).
func (m *Minter) ensureRoleBinding(ctx context.Context, ns, name string, labels map[string]string) ([]string, error) {
	want := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}
	bindings, rd := m.client.RbacV1().RoleBindings(ns), m.reads()
	create := func() error {
		created, err := bindings.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			rd.wrote(created)
		}
		return err
	}
	rb, err := rd.roleBinding(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		cerr := create()
		if cerr == nil {
			return nil, nil
		}
		if !apierrors.IsAlreadyExists(cerr) {
			return nil, fmt.Errorf("creating RoleBinding %s/%s: %w", ns, name, cerr)
		}
		rb, err = bindings.Get(ctx, name, metav1.GetOptions{})
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading RoleBinding %s/%s: %w", ns, name, err)
	case rb.RoleRef != want.RoleRef:
		// roleRef cannot change: the binding is made anew.
		if err := bindings.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting RoleBinding %s/%s: %w", ns, name, err)
		}
		rd.deleted(rb)
		if err := create(); err != nil {
			return nil, fmt.Errorf("recreating RoleBinding %s/%s: %w", ns, name, err)
		}
		return []string{fmt.Sprintf("RoleBinding %s/%s was bound to %s %s", ns, name, rb.RoleRef.Kind, rb.RoleRef.Name)}, nil
	case !slices.Equal(rb.Subjects, want.Subjects) || !hasLabels(rb.Labels, labels):
		var repaired []string
		if !slices.Equal(rb.Subjects, want.Subjects) {
			repaired = append(repaired, fmt.Sprintf("RoleBinding %s/%s had other subjects", ns, name))
		}
		rb = rb.DeepCopy()
		rb.Subjects, rb.Labels = want.Subjects, withLabels(rb.Labels, labels)
		updated, err := bindings.Update(ctx, rb, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("updating RoleBinding %s/%s: %w", ns, name, err)
		}
		rd.wrote(updated)
		return repaired, nil
	}
	return nil, nil
}

// hasLabels reports whether have holds every label of want.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// withLabels is have with want's labels set.
func withLabels(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}
