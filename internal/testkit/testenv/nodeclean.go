package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// A real node leaves what a kubelet and containerd leave on a machine:
// container processes (their shims run apart from containerd), network
// namespaces and veth pairs, iptables rules, mounts. Deleting the pods
// through the API while the kubelet still runs lets the kubelet stop them as
// on any cluster (CNI teardown included); what is left after that is killed
// through containerd and unmounted. Outside the node's directory the kubelet
// and containerd still leave, by fixed paths, the solar0 bridge, empty
// kubepods cgroups, /var/lib/kubelet/device-plugins/kubelet.sock and
// /run/containerd/s (shim sockets): harmless to the next node.

// drain cordons the Node and deletes its pods, then waits (a minute at most)
// until the kubelet has stopped them and they are gone.
func (n *Node) drain(t testing.TB, api *APIServer) {
	ctx := context.Background()
	nodes := api.Client.CoreV1().Nodes()
	if node, err := nodes.Get(ctx, n.Name, metav1.GetOptions{}); err == nil {
		node.Spec.Unschedulable = true
		_, _ = nodes.Update(ctx, node, metav1.UpdateOptions{})
	}
	onNode := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()}
	pods := func() []corev1.Pod {
		list, err := api.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, onNode)
		if err != nil {
			return nil
		}
		return list.Items
	}
	for _, p := range pods() {
		_ = api.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	}
	deadline := time.Now().Add(time.Minute)
	for len(pods()) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if left := pods(); len(left) > 0 {
		t.Logf("node %s: %d pods still there after a minute; killing their containers", n.Name, len(left))
	}
}

// killTasks kills and removes every container containerd still runs for
// the kubelet (namespace k8s.io).
func (n *Node) killTasks(t testing.TB) {
	c := func(args ...string) (string, error) {
		out, err := exec.Command("ctr", append([]string{"--address", n.socket(), "--namespace", "k8s.io"}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := c("tasks", "ls", "-q")
	if err != nil {
		t.Logf("listing containerd's tasks: %v: %s", err, out)
		return
	}
	for _, id := range strings.Fields(out) {
		_, _ = c("tasks", "kill", "-s", "SIGKILL", id)
		_, _ = c("tasks", "delete", "--force", id)
	}
	if out, err := c("containers", "ls", "-q"); err == nil {
		for _, id := range strings.Fields(out) {
			_, _ = c("containers", "delete", id)
		}
	}
}

// removeLogLinks removes the links the kubelet made in /var/log/containers
// (a fixed path) to the container logs under dir.
func removeLogLinks(t testing.TB, dir string) {
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, dir+"/") {
			if err := os.Remove(l); err != nil {
				t.Logf("removing %s: %v", l, err)
			}
		}
	}
}

// unmountUnder removes every mount below dir, deepest first (containerd's
// overlay roots and network namespaces, the kubelet's volume tmpfs), so that
// the test's temporary directory can be removed.
func unmountUnder(t testing.TB, dir string) {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Logf("reading mounts: %v", err)
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mounts = append(mounts, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Logf("unmounting %s: %v", m, err)
		}
	}
}
