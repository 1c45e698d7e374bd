package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClusterDeploymentBecomesAvailable(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real API server, controller manager, scheduler and kwok")
	}
	begin := time.Now()
	api := StartCluster(t)
	t.Logf("StartCluster took %s", time.Since(begin).Round(time.Millisecond))
	ctx := context.Background()
	const ns = "apps"
	api.CreateNamespaces(t, ns)
	t.Cleanup(func() {
		if t.Failed() {
			logWorkloads(t, api, ns)
		}
	})

	// A pod that fits no Node (a nodeSelector no Node has) is never bound,
	// so kwok never marks it Running: readiness is earned, not given.
	pending := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nowhere", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"solar.test/no-such-node": "true"},
			Containers:   []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}},
		},
	}
	// The namespace's default ServiceAccount, which the ServiceAccount
	// admission requires, comes from the controller manager: retry until then.
	require.Eventually(t, func() bool {
		_, err := api.Client.CoreV1().Pods(ns).Create(ctx, pending, metav1.CreateOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "creating a pod in a new namespace")

	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "web",
					Image: "example.invalid/web:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
					}},
				}}},
			},
		},
	}
	start := time.Now()
	_, err := api.Client.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{})
	require.NoError(t, err)

	var got *appsv1.Deployment
	require.Eventually(t, func() bool {
		got, err = api.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == got.Generation &&
			got.Status.AvailableReplicas == 3 && got.Status.UpdatedReplicas == 3 &&
			deploymentCondition(got, appsv1.DeploymentAvailable) == corev1.ConditionTrue
	}, 30*time.Second, 100*time.Millisecond, "the Deployment becomes Available")
	t.Logf("Deployment Available %s after its creation", time.Since(start).Round(time.Millisecond))

	sets, err := api.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Len(t, sets.Items, 1)
	assert.EqualValues(t, 3, sets.Items[0].Status.ReadyReplicas)
	assert.EqualValues(t, 3, sets.Items[0].Status.AvailableReplicas)

	pods, err := api.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 3)
	for _, p := range pods.Items {
		assert.Equal(t, ClusterNode, p.Spec.NodeName, "the scheduler bound %s", p.Name)
		assert.Equal(t, corev1.PodRunning, p.Status.Phase, "kwok runs %s", p.Name)
		assert.NotEmpty(t, p.Status.PodIP, "kwok gives %s an IP", p.Name)
	}

	// By now the scheduler has long seen the pod that fits nowhere.
	p, err := api.Client.CoreV1().Pods(ns).Get(ctx, "nowhere", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodPending, p.Status.Phase)
	assert.Empty(t, p.Spec.NodeName)
	var scheduled *corev1.PodCondition
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			scheduled = &p.Status.Conditions[i]
		}
	}
	require.NotNil(t, scheduled, "the scheduler reports why %s is not scheduled", p.Name)
	assert.Equal(t, corev1.ConditionFalse, scheduled.Status)
	assert.Equal(t, corev1.PodReasonUnschedulable, scheduled.Reason)

	// Deleting the Deployment deletes its ReplicaSet and pods (garbage
	// collector; kwok removes the terminating pods).
	require.NoError(t, api.Client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{
		PropagationPolicy: new(metav1.DeletePropagationBackground),
	}))
	require.Eventually(t, func() bool {
		pods, err := api.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(pods.Items) == 0
	}, 30*time.Second, 100*time.Millisecond, "the Deployment's pods are gone")
}

func deploymentCondition(d *appsv1.Deployment, typ appsv1.DeploymentConditionType) corev1.ConditionStatus {
	for _, c := range d.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// logWorkloads logs the Deployments, ReplicaSets, pods and events of ns.
func logWorkloads(t *testing.T, api *APIServer, ns string) {
	ctx := context.Background()
	if l, err := api.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, d := range l.Items {
			t.Logf("Deployment %s: %+v", d.Name, d.Status)
		}
	}
	if l, err := api.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, r := range l.Items {
			t.Logf("ReplicaSet %s: %+v", r.Name, r.Status)
		}
	}
	if l, err := api.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range l.Items {
			t.Logf("Pod %s on %q: %s %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
	}
	if l, err := api.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range l.Items {
			t.Logf("Event %s %s: %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}
