package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod bound to the real node pulls its image from the test registry by
// digest and its container really runs, as the user its securityContext
// names: what kwok's Node can only pretend.
func TestPodRunsOnRealNode(t *testing.T) {
	SkipUnlessNodeCan(t)
	api := StartCluster(t)
	reg := StartRegistry(t, RegistryOptions{NoAuth: true})
	begin := time.Now()
	node := StartNode(t, api, reg)
	t.Logf("StartNode took %s", time.Since(begin).Round(time.Millisecond))
	ctx := context.Background()
	const ns = "real"
	api.CreateNamespaces(t, ns)

	uid := int64(65532)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:    map[string]string{"kubernetes.io/hostname": node.Name},
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid},
			Containers: []corev1.Container{{
				Name: "hello", Image: node.PodImage, Args: []string{"hello", "from", "a", "real", "node"},
			}},
		},
	}
	// The namespace's default ServiceAccount comes from the controller
	// manager: retry until then.
	require.Eventually(t, func() bool {
		_, err := api.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "creating the pod")

	var got *corev1.Pod
	require.Eventually(t, func() bool {
		var err error
		got, err = api.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning
	}, 2*time.Minute, 200*time.Millisecond, "pod Running on %s", node.Name)
	assert.Equal(t, node.Name, got.Spec.NodeName)
	require.Len(t, got.Status.ContainerStatuses, 1)
	status := got.Status.ContainerStatuses[0]
	assert.NotNil(t, status.State.Running, "container state: %+v", status.State)
	assert.Equal(t, node.PodImage, status.ImageID[len(status.ImageID)-len(node.PodImage):], "the image ran by digest")

	// The log comes from the container itself, through the API server and
	// the kubelet.
	var logs []byte
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		logs, err = api.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		require.NoError(c, err)
		require.NotEmpty(c, logs)
	}, 30*time.Second, 200*time.Millisecond, "the container's log")
	assert.Equal(t, `podbin: uid=65532 gid=65532 host=hello args=["hello" "from" "a" "real" "node"]`+"\n", string(logs))
}
