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
// names, under the runtime's seccomp profile, reading the Secret it mounts:
// what kwok's Node can only pretend.
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

	// The agent Deployment's security settings (charts/solar-agent), and a
	// Secret mounted read-only as its kubeconfig is.
	uid, no, yes := int64(65532), false, true
	_, err := api.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: ns},
		StringData: map[string]string{"kubeconfig": "apiVersion: v1"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node.Name},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "hello", Image: node.PodImage, Args: []string{"hello", "read=/etc/solar/kubeconfig"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "kubeconfig", MountPath: "/etc/solar", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: "kubeconfig"},
			}}},
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
	// seccomp=2: the runtime's default profile filters the container's calls.
	assert.Equal(t, `podbin: uid=65532 gid=65532 groups=[65532] host=hello seccomp=2 args=["hello" "read=/etc/solar/kubeconfig"]`+"\n"+
		"podbin: /etc/solar/kubeconfig: apiVersion: v1\n", string(logs))
}
