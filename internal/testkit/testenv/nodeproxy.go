package testenv

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// KubernetesServiceIP is the ClusterIP of the default namespace's kubernetes
// Service: the first address of start-apiserver.sh's
// --service-cluster-ip-range. The kubelet gives every container
// KUBERNETES_SERVICE_HOST=KubernetesServiceIP and KUBERNETES_SERVICE_PORT=443
// (client-go's in-cluster config), and the API server's own serving
// certificate names this address, so https://KubernetesServiceIP is also
// where a pod reaches the API server with a kubeconfig (a PipelineConfig's
// spec.agent.apiserverURL).
const KubernetesServiceIP = "10.96.0.1"

// proxyKubernetesService plays kube-proxy's part for the one Service the
// node's pods use, the API server's: KubernetesServiceIP:443 is added to the
// loopback device (pods reach the host's addresses through the node's bridge)
// and each connection there is forwarded to api, which listens on 127.0.0.1
// only, where no pod reaches. kube-proxy itself would DNAT the ClusterIP to
// the API server's advertised address, 127.0.0.1, which the kernel drops as
// a martian from a pod's network unless route_localnet is set machine-wide.
// It skips the test where the address cannot be added.
func proxyKubernetesService(t testing.TB, api *APIServer) {
	t.Helper()
	u, err := url.Parse(api.URL)
	if err != nil {
		t.Fatalf("the API server's URL %q: %v", api.URL, err)
	}
	out, err := exec.Command("ip", "addr", "add", KubernetesServiceIP+"/32", "dev", "lo").CombinedOutput()
	added := err == nil
	if err != nil && !strings.Contains(string(out), "File exists") {
		t.Skipf("the node's pods reach the API server at %s, which cannot be added to lo: %v: %s", KubernetesServiceIP, err, out)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(KubernetesServiceIP, "443"))
	if err != nil {
		t.Fatalf("listening on the kubernetes Service's address: %v", err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
		if added {
			_ = exec.Command("ip", "addr", "del", KubernetesServiceIP+"/32", "dev", "lo").Run()
		}
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			go forward(c, u.Host)
		}
	}()
}

// forward copies c to and from a new connection to addr until either side
// closes.
func forward(c net.Conn, addr string) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}
