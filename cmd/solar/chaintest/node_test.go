package chaintest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/imagetest"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// realNodeTaint keeps every pod but the agents' off the real node: the
// examples' applications run on kwok's Node, where their images need not
// exist.
const realNodeTaint = "solar.test/real-node"

// TestAgentContainerOnRealNode: Solar's own solar-agent image, built by
// internal/imagebuild and published with Solar's publish path, is what the
// agent release of `solar publish` names by digest (the PipelineConfig's
// spec.agent.image); on a real node (kubelet, containerd, runc) the
// container starts from it as 65532, reads the kubeconfig the chart mounts
// (the SolAr API server, by the address pods reach it at) and its cluster's
// Flux objects through the in-cluster config, writes its Target's
// TargetReport and becomes ready.
func TestAgentContainerOnRealNode(t *testing.T) {
	testenv.SkipUnlessNodeCan(t)
	var node *testenv.Node
	var image string
	e := startChain(t, chainOptions{prepare: func(e *chainEnv) {
		images := testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true})
		node = testenv.StartNode(t, e.api, images)
		taint(t, e, node.Name)
		image = imagetest.Publish(t, images, "solar-agent")
		e.edit("shared/pipeline.yaml", e.api.URL, "https://"+testenv.KubernetesServiceIP,
			"tokenTTL: 24h", "tokenTTL: 24h\n    image: "+image)
		e.edit("alpha/releases.yaml", "  targetNamespace: solar-system", "  targetNamespace: solar-system\n  values:\n"+
			"    nodeSelector: {kubernetes.io/hostname: "+node.Name+"}\n"+
			"    tolerations: [{key: "+realNodeTaint+", operator: Exists, effect: NoSchedule}]")
	}})
	ctx := context.Background()
	_, err := e.settle(4 * time.Minute)
	require.NoError(t, err)

	for _, key := range []string{"alpha/edge-1", "alpha/edge-2"} {
		ns, name, _ := strings.Cut(key, "/")
		n := e.names[key]["solar-agent"]
		pods, err := e.api.Client.CoreV1().Pods(n.TargetNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/instance=" + n.AppRelease})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1, "%s: the agent's pod", key)
		pod := pods.Items[0]
		assert.Equal(t, node.Name, pod.Spec.NodeName, key)
		require.Len(t, pod.Spec.Containers, 1)
		assert.Equal(t, image, pod.Spec.Containers[0].Image, "%s: the agent release names the published image by digest", key)
		assert.Equal(t, int64(65532), *pod.Spec.SecurityContext.RunAsUser)
		require.Len(t, pod.Status.ContainerStatuses, 1)
		status := pod.Status.ContainerStatuses[0]
		assert.True(t, status.Ready, "%s: ready once a report went through: %+v", key, status.State)
		assert.True(t, strings.HasSuffix(status.ImageID, image[strings.LastIndex(image, "@"):]), "%s: ran %s", key, status.ImageID)

		report, err := e.dyn.Resource(kube.TargetReportGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		last, _, _ := unstructured.NestedString(report.Object, "spec", "lastReportTime")
		assert.NotEmpty(t, last, "%s: the container wrote its TargetReport", key)
		releases, _, _ := unstructured.NestedSlice(report.Object, "spec", "releases")
		assert.NotEmpty(t, releases, "%s: what Flux did, read in the cluster", key)
		logs, err := e.api.Client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		require.NoError(t, err)
		t.Logf("%s: the agent's log:\n%s", key, logs)
	}
}

// taint keeps the pods that do not tolerate realNodeTaint off node.
func taint(t *testing.T, e *chainEnv, node string) {
	t.Helper()
	ctx := context.Background()
	n, err := e.api.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: realNodeTaint, Effect: corev1.TaintEffectNoSchedule})
	_, err = e.api.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}
