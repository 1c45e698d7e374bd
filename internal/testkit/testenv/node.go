package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node is a real kubelet, with containerd and runc, joined to a test
// cluster beside kwok's fake Node: the pods bound to it really run.
type Node struct {
	// Name is the Node's name; its kubernetes.io/hostname label says the same,
	// for a pod's nodeSelector.
	Name string
	// PodImage is the image PushPodImage pushed (by digest), which the node
	// also runs as its sandbox (pause) image.
	PodImage string
	// Dir holds containerd's and the kubelet's files (scripts/start-node.sh).
	Dir string
}

// StartNode joins a real node to the cluster of api (StartCluster) through
// scripts/start-node.sh and returns once the Node is Ready and schedulable.
// Images are pulled over plain HTTP from reg, which must serve anonymously
// (RegistryOptions{NoAuth: true}); StartNode pushes PushPodImage's image to
// it as solar-test/podbin.
//
// It skips the test, with the reason, where the machine cannot run one: not
// root, kubelet (scripts/install-tools.sh kubelet) or containerd, runc and
// the CNI plugins (apt-get install containerd runc
// containernetworking-plugins) not installed, no overlay filesystem, or
// containerd or the kubelet exiting at start (the skip quotes their last
// lines). Its pods reach the API server at KubernetesServiceIP, as in-cluster
// clients do on a real cluster. The node's pods are deleted (gracefully) when the test ends, then
// the kubelet and containerd are stopped and their mounts removed.
func StartNode(t testing.TB, api *APIServer, reg *Registry) *Node {
	t.Helper()
	return StartNodeWith(t, api, reg, NodeOptions{})
}

// NodeOptions change how StartNodeWith sets the node up.
type NodeOptions struct {
	// Mirrors send the node's pulls of a registry to a site's registry
	// first (containerd's registry mirrors).
	Mirrors []Mirror
}

// Mirror is where the node's container runtime pulls the images of one
// registry from: Site holds Source's repositories under Path, as
// renderer/mirror relocates them (Path "mirror/" + Source: Source's
// solar-test/podbin is Site's mirror/SOURCE/solar-test/podbin). containerd
// asks Site first, with Site's CA and credentials, and Source itself only
// when Site fails: a test that stops Source sees every pull come from Site.
type Mirror struct {
	Source string
	Site   *Registry
	Path   string
}

// StartNodeWith is StartNode with options.
func StartNodeWith(t testing.TB, api *APIServer, reg *Registry, opts NodeOptions) *Node {
	t.Helper()
	SkipUnlessNodeCan(t)
	lockMachine(t)
	n := &Node{Name: "solar-node-0", Dir: t.TempDir()}
	n.PodImage = PushPodImage(t, reg.Host, "solar-test/podbin")
	script := filepath.Join(Root(t), "scripts", "start-node.sh")
	ctr := exec.Command("bash", append([]string{script, "containerd", n.Dir, reg.Host, n.PodImage}, mirrorArgs(t, opts.Mirrors)...)...)
	ctr.Env = append(os.Environ(), mirrorEnv(t, opts.Mirrors)...)
	ctrLogs, stopContainerd := start(t, ctr)
	waitOrSkip(t, "containerd", 30*time.Second, ctr, ctrLogs, func() bool {
		return exec.Command("ctr", "--address", n.socket(), "version").Run() == nil
	})
	kubelet := exec.Command("bash", script, "kubelet", n.Dir, api.Kubeconfig, n.Name,
		fmt.Sprint(FreePort(t)), fmt.Sprint(FreePort(t)))
	kubeletLogs, stopKubelet := start(t, kubelet)
	t.Cleanup(func() {
		n.drain(t, api)
		stopKubelet()
		n.killTasks(t)
		stopContainerd()
		unmountUnder(t, n.Dir)
		removeLogLinks(t, n.Dir)
		if t.Failed() {
			t.Logf("containerd output:\n%s\nkubelet output:\n%s", ctrLogs.String(), kubeletLogs.String())
		}
	})
	ctx := context.Background()
	waitOrSkip(t, "the kubelet", 120*time.Second, kubelet, kubeletLogs, func() bool {
		node, err := api.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		return err == nil && nodeReady(node)
	})
	untaintNotReady(t, api, n.Name)
	proxyKubernetesService(t, api)
	return n
}

// SkipUnlessNodeCan skips the test where StartNode could not start a node:
// under -short, not root, or without the kubelet, containerd, runc or the
// CNI plugins, or without the overlay filesystem. A test calls it before it
// starts the cluster, so that it skips at once; StartNode calls it too.
func SkipUnlessNodeCan(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real node: skipped under -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("a real node needs root (containerd and runc): skipped")
	}
	for _, tool := range []struct{ name, install string }{
		{"kubelet", "scripts/install-tools.sh kubelet"},
		{"containerd", "apt-get install containerd"},
		{"runc", "apt-get install runc"},
		{"/usr/lib/cni/bridge", "apt-get install containernetworking-plugins"},
	} {
		if _, err := exec.LookPath(tool.name); err != nil {
			t.Skipf("a real node needs %s (%s): %v", tool.name, tool.install, err)
		}
	}
	if fs, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(fs), "\toverlay\n") {
		t.Skipf("a real node needs the overlay filesystem (containerd's snapshotter): not in /proc/filesystems (%v)", err)
	}
}

// lockMachine holds the machine-wide node lock until the test ends: two
// kubelets on one machine would share the kubepods cgroups, the solar0 bridge
// and its 10.244.0.0/24 addresses (each its own IPAM state), so the tests of
// several packages that start a node take turns.
func lockMachine(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile("/run/solar-test-node.lock", os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err, "opening the node lock")
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX), "taking the node lock")
	t.Cleanup(func() { f.Close() })
}

func (n *Node) socket() string { return filepath.Join(n.Dir, "containerd.sock") }

// nodeReady reports whether node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// untaintNotReady lifts the not-ready taint the API server's admission put
// on the Node when the kubelet registered it: node-lifecycle-controller,
// which would lift it on a real cluster, is not run (kcmControllers).
func untaintNotReady(t testing.TB, api *APIServer, name string) {
	t.Helper()
	ctx := context.Background()
	node, err := api.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	var taints []corev1.Taint
	for _, taint := range node.Spec.Taints {
		if taint.Key != corev1.TaintNodeNotReady {
			taints = append(taints, taint)
		}
	}
	node.Spec.Taints = taints
	_, err = api.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err, "lifting the not-ready taint of Node %s", name)
}

// waitOrSkip waits as waitUntil does, but skips the test, quoting the
// process's last output, when cmd exits first: that is the machine refusing
// (cgroups, overlayfs, seccomp), not the code under test failing.
func waitOrSkip(t testing.TB, what string, timeout time.Duration, cmd *exec.Cmd, logs *LockedBuffer, ready func() bool) {
	t.Helper()
	waitUntil(t, what, timeout, logs, func() bool {
		if exited(cmd) {
			t.Skipf("this machine refuses a real node: %s exited at start; its last lines:\n%s", what, lastLines(logs.String(), 8))
		}
		return ready()
	})
}

// exited reports whether cmd's process has ended (a zombie: start waits for
// it only when the test stops it).
func exited(cmd *exec.Cmd) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return true
	}
	// pid (comm) STATE ...: comm may hold spaces, the state follows its ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// mirrorArgs are start-node.sh's SOURCE_HOST=URL arguments: each URL is the
// site's API root for one source registry (https://SITE/v2/PATH, which
// containerd takes as is: override_path).
func mirrorArgs(t testing.TB, mirrors []Mirror) []string {
	t.Helper()
	var args []string
	for _, m := range mirrors {
		require.Same(t, mirrors[0].Site, m.Site, "a node's mirrors are one site's registry (start-node.sh: one CA, one credential)")
		scheme := "http"
		if m.Site.CAFile != "" {
			scheme = "https"
		}
		args = append(args, m.Source+"="+scheme+"://"+m.Site.Host+"/v2/"+strings.Trim(m.Path, "/"))
	}
	return args
}

// mirrorEnv gives start-node.sh the site's CA and a file holding its
// credentials (user:password, never an argument: arguments are public).
func mirrorEnv(t testing.TB, mirrors []Mirror) []string {
	t.Helper()
	if len(mirrors) == 0 {
		return nil
	}
	site := mirrors[0].Site
	auth := filepath.Join(t.TempDir(), "mirror-auth")
	require.NoError(t, os.WriteFile(auth, []byte(site.Username+":"+site.Password), 0o600))
	return []string{"MIRROR_CA=" + site.CAFile, "MIRROR_AUTH_FILE=" + auth}
}
