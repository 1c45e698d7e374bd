package testenv

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/config/crd"
)

// APIServer is a running kube-apiserver on etcd, with the solar CRDs.
type APIServer struct {
	// URL is https://127.0.0.1:PORT.
	URL string
	// Kubeconfig is the file of the admin user (group system:masters).
	Kubeconfig string
	// CAFile is the API server's serving certificate.
	CAFile string
	Config *rest.Config
	Client kubernetes.Interface

	dir   string
	ports []int
	stop  func()
}

// StartAPIServer runs scripts/start-apiserver.sh, waits until the API server
// is ready and installs the CRDs of config/crd. It fails the test, saying how
// to install them, when etcd or kube-apiserver are missing.
func StartAPIServer(t testing.TB) *APIServer {
	t.Helper()
	Tool(t, "etcd")
	Tool(t, "solar-testpki")
	Tool(t, "kube-apiserver")
	dir := t.TempDir()
	s := &APIServer{
		dir:        dir,
		ports:      []int{FreePort(t), FreePort(t), FreePort(t)},
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		CAFile:     filepath.Join(dir, "certs", "apiserver.crt"),
	}
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", s.ports[1])
	s.run(t)
	s.InstallCRDs(t, crd.FS)
	return s
}

// Stop kills the API server and its etcd with SIGKILL, as a crash would, and
// returns once both are gone. Requests fail with "connection refused" until
// Restart.
func (s *APIServer) Stop() { s.stop() }

// Restart starts the API server that Stop killed again, on the same data,
// keys, certificate and port, and waits until it is ready.
func (s *APIServer) Restart(t testing.TB) {
	t.Helper()
	s.run(t)
}

// run starts the script on s's folder and ports and waits for /readyz.
func (s *APIServer) run(t testing.TB) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(Root(t), "scripts", "start-apiserver.sh"), s.dir,
		fmt.Sprint(s.ports[0]), fmt.Sprint(s.ports[1]), fmt.Sprint(s.ports[2]))
	// etcd runs in the script's process group: stop kills both.
	logs, stop := start(t, cmd)
	s.stop = stop
	// Under the load of parallel test packages on two cores the API server
	// has been seen to take over a minute to report ready: a failure says
	// which of its checks was late (/readyz?verbose).
	waitUntilSaying(t, "the API server", 2*time.Minute, logs, func() (bool, string) {
		if _, err := os.Stat(s.CAFile); err != nil {
			return false, "no CA file yet"
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
		require.NoError(t, err)
		client, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, body)
		}
		s.Config, s.Client = cfg, client
		return true, ""
	})
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CreateNamespaces creates the namespaces.
func (s *APIServer) CreateNamespaces(t testing.TB, names ...string) {
	t.Helper()
	for _, ns := range names {
		_, err := s.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err, "creating namespace %s", ns)
	}
}

// InstallCRDs creates every CRD of the *.yaml files of fsys and waits until
// each is established.
func (s *APIServer) InstallCRDs(t testing.TB, fsys fs.FS) {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(s.Config)
	require.NoError(t, err)
	files, err := fs.Glob(fsys, "*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		require.NoError(t, err)
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal(b, &obj))
		u := &unstructured.Unstructured{Object: obj}
		_, err = dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err, f)
		// Wait until the CRD is Established: its resources are served.
		require.Eventually(t, func() bool {
			got, err := dyn.Resource(crdGVR).Get(ctx, u.GetName(), metav1.GetOptions{})
			if err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true
				}
			}
			return false
		}, 30*time.Second, 100*time.Millisecond, "CRD %s established", u.GetName())
	}
}
