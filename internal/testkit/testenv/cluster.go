package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterNode is the name of the one fake Node StartCluster makes; its
// allocatable resources are ClusterNodeCPU, ClusterNodeMemory and
// ClusterNodePods.
const (
	ClusterNode       = "kwok-node-0"
	ClusterNodeCPU    = "32"
	ClusterNodeMemory = "128Gi"
	ClusterNodePods   = "110"
)

// kwokNodeAnnotation marks the Nodes kwok manages (its
// --manage-nodes-with-annotation-selector); kwok leaves every other Node alone.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// kcmControllers are the controllers kube-controller-manager runs: the
// workload controllers kstatus and Helm wait on (Deployment → ReplicaSet →
// Pod, StatefulSet, DaemonSet, Job), the ServiceAccount controller (it makes
// the `default` ServiceAccount of every namespace: the API server's
// ServiceAccount admission refuses pods whose ServiceAccount does not exist),
// the token controller (legacy service-account-token Secrets) and the
// kube-root-ca.crt publisher (pods' projected token volumes name it), the
// namespace controller (deleting a namespace empties it) and the garbage
// collector (deleting a Deployment deletes its ReplicaSets and pods, as helm
// uninstall expects). Left out on purpose: node-lifecycle and taint-eviction
// (they would taint, and evict from, a fake Node whose Lease renewal lags on a
// busy machine; StartCluster lifts the Node's initial not-ready taint
// itself), node-ipam, endpoints/endpointslice (nothing routes traffic: no
// containers run), persistent volumes, CSR signing, quotas, autoscaling.
var kcmControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"job-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"namespace-controller",
	"garbage-collector-controller",
}

// StartCluster starts an API server (StartAPIServer) and makes it a cluster
// whose workloads become ready, as on a real one, with no container runtime:
//
//   - kube-controller-manager runs the workload controllers (Deployment,
//     ReplicaSet, StatefulSet, DaemonSet, Job), the ServiceAccount and token
//     controllers (every namespace gets its `default` ServiceAccount), the
//     namespace controller and the garbage collector;
//   - kube-scheduler binds pods to Nodes that fit them (resources,
//     nodeSelector, affinity, taints);
//   - kwok plays the kubelet of one fake Node, ClusterNode (Ready, with room
//     for ClusterNodePods pods): with kwok's default stages it marks each pod
//     bound to it Running and Ready (containers running, Ready and
//     ContainersReady conditions, a pod IP), completes the pods of Jobs and
//     removes deleted pods at once.
//
// The Node carries no taint: StartCluster lifts the not-ready taint the API
// server's admission puts on new Nodes, as node-lifecycle-controller would
// once the Node is Ready, and nothing taints it later.
//
// "Ready" therefore means scheduled: a pod becomes Ready as soon as the
// scheduler binds it; no image is pulled, no container runs, probes are not
// run, and a Secret or ConfigMap a pod mounts need not exist (a real kubelet
// would hold the pod in ContainerCreating). What the API server checks still
// holds: a pod whose ServiceAccount does not exist is refused. A pod that fits
// no Node stays Pending (Unschedulable), so a Deployment with such pods never
// becomes Available. Deployments,
// ReplicaSets, StatefulSets and DaemonSets reach their Available/ready status
// through their real controllers, so kstatus (Helm's --wait, helm-controller)
// waits complete as on a real cluster.
//
// Every process runs on 127.0.0.1 (random ports, no leader election) and is
// killed in t.Cleanup; their output is logged when the test fails.
// StartCluster returns once the Node is Ready, both components are healthy
// and the default namespace has its ServiceAccount.
func StartCluster(t testing.TB) *APIServer {
	t.Helper()
	kcm := Tool(t, "kube-controller-manager")
	scheduler := Tool(t, "kube-scheduler")
	kwok := Tool(t, "kwok")
	api := StartAPIServer(t)
	ctx := context.Background()
	createNode(t, api)
	startControllerManager(t, api, kcm)
	startScheduler(t, api, scheduler)
	kwokLogs := startKwok(t, api, kwok)
	waitUntil(t, "kwok's Node "+ClusterNode, 60*time.Second, kwokLogs, func() bool {
		n, err := api.Client.CoreV1().Nodes().Get(ctx, ClusterNode, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	})
	return api
}

// createNode makes the fake Node before kwok and the scheduler start: kwok
// finds it at once, and nothing but this function writes it before it is
// untainted.
func createNode(t testing.TB, api *APIServer) {
	t.Helper()
	ctx := context.Background()
	node, err := api.Client.CoreV1().Nodes().Create(ctx, clusterNode(ClusterNode), metav1.CreateOptions{})
	require.NoError(t, err, "creating the fake Node")
	// The API server's TaintNodesByCondition admission taints every new Node
	// not-ready:NoSchedule; on a real cluster node-lifecycle-controller lifts
	// the taint once the kubelet reports Ready. That controller is not run
	// (kcmControllers): lift it here, once (the admission acts on create only).
	var taints []corev1.Taint
	for _, taint := range node.Spec.Taints {
		if taint.Key != corev1.TaintNodeNotReady {
			taints = append(taints, taint)
		}
	}
	if len(taints) != len(node.Spec.Taints) {
		node.Spec.Taints = taints
		_, err = api.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		require.NoError(t, err, "lifting the not-ready taint of the fake Node")
	}
}

// startControllerManager runs kube-controller-manager with kcmControllers
// and waits until it is healthy and has made the default ServiceAccount.
func startControllerManager(t testing.TB, api *APIServer, bin string) {
	t.Helper()
	port := FreePort(t)
	logs := startLogged(t, "kube-controller-manager", exec.Command(bin,
		"--kubeconfig", api.Kubeconfig,
		"--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--cert-dir", t.TempDir(),
		"--controllers", strings.Join(kcmControllers, ","),
		"--service-account-private-key-file", filepath.Join(api.dir, "sa.key"),
		"--root-ca-file", api.CAFile,
		// Two cores: a few workers each are plenty for tens of pods.
		"--concurrent-deployment-syncs", "2",
		"--concurrent-replicaset-syncs", "2",
		"--concurrent-statefulset-syncs", "2",
		"--concurrent-daemonset-syncs", "2",
		"--concurrent-job-syncs", "2",
		"--concurrent-namespace-syncs", "2",
		"--concurrent-serviceaccount-token-syncs", "2",
		"--concurrent-gc-syncs", "5",
	))
	waitUntil(t, "kube-controller-manager", 60*time.Second, logs, func() bool {
		if !healthy(port) {
			return false
		}
		_, err := api.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil
	})
}

// startScheduler runs kube-scheduler and waits until it is healthy.
func startScheduler(t testing.TB, api *APIServer, bin string) {
	t.Helper()
	port := FreePort(t)
	logs := startLogged(t, "kube-scheduler", exec.Command(bin,
		"--kubeconfig", api.Kubeconfig,
		"--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--cert-dir", t.TempDir(),
	))
	waitUntil(t, "kube-scheduler", 60*time.Second, logs, func() bool { return healthy(port) })
}

// startKwok runs kwok on the Nodes annotated kwokNodeAnnotation=fake and
// returns its output.
func startKwok(t testing.TB, api *APIServer, bin string) *LockedBuffer {
	t.Helper()
	// kwok has no built-in Stages: scripts/install-tools.sh puts the default
	// ones kwokctl uses (from kwok's module) beside the binary.
	real, err := filepath.EvalSymlinks(bin)
	require.NoError(t, err)
	stages := filepath.Join(filepath.Dir(real), "stages.yaml")
	if _, err := os.Stat(stages); err != nil {
		t.Fatalf("kwok's stages: run scripts/install-tools.sh (make test does): %v", err)
	}
	cmd := exec.Command(bin,
		"--kubeconfig", api.Kubeconfig,
		"--config", stages,
		"--manage-nodes-with-annotation-selector", kwokNodeAnnotation+"=fake",
		// kwok keeps a Lease per Node, as a kubelet does.
		"--node-lease-duration-seconds", "40",
	)
	// kwok reads ~/.kwok/kwok.yaml too when it exists: not on a test machine.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	return startLogged(t, "kwok", cmd)
}

// startLogged starts cmd (start) and logs its output when the test fails.
func startLogged(t testing.TB, name string, cmd *exec.Cmd) *LockedBuffer {
	t.Helper()
	logs, _ := start(t, cmd)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s output:\n%s", name, logs.String())
		}
	})
	return logs
}

// healthy reports whether the component serving on 127.0.0.1:port (its own
// self-signed certificate) answers /healthz with ok.
func healthy(port int) bool {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // a local test component's self-signed certificate
	}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// clusterNode is a fake Node kwok manages. Its status (resources, node
// info) is set on create, as kubelet registration does; kwok adds the
// conditions (Ready) and addresses.
func clusterNode(name string) *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(ClusterNodeCPU),
		corev1.ResourceMemory: resource.MustParse(ClusterNodeMemory),
		corev1.ResourcePods:   resource.MustParse(ClusterNodePods),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources,
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    "amd64",
				OperatingSystem: "linux",
			},
		},
	}
}
