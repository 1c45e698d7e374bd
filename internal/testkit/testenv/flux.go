package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InstallFluxCRDs installs the Flux CRDs scripts/install-tools.sh put beside
// source-controller (source-controller's own and helm-controller's
// HelmRelease) into the API server; it returns source-controller's path.
func InstallFluxCRDs(t testing.TB, api *APIServer) string {
	t.Helper()
	bin := Tool(t, "source-controller")
	real, err := filepath.EvalSymlinks(bin)
	require.NoError(t, err)
	api.InstallCRDs(t, os.DirFS(filepath.Join(filepath.Dir(real), "crd")))
	return bin
}

// SourceController is a running Flux source-controller.
type SourceController struct {
	// Namespace is its runtime namespace, flux-system.
	Namespace string
	// Storage is the host:port of its artifact server.
	Storage string
}

// StartSourceController installs the Flux CRDs (InstallFluxCRDs) and runs
// source-controller against the API server on 127.0.0.1. It trusts the CA files given, as an image with those CAs in its
// trust store would: for sources without a certSecretRef.
func StartSourceController(t testing.TB, api *APIServer, trust ...string) *SourceController {
	t.Helper()
	bin := InstallFluxCRDs(t, api)

	sc := &SourceController{Namespace: "flux-system", Storage: fmt.Sprintf("127.0.0.1:%d", FreePort(t))}
	_, err := api.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sc.Namespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	health := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	cmd := exec.Command(bin,
		"--storage-path", t.TempDir(),
		"--storage-addr", sc.Storage, "--storage-adv-addr", sc.Storage,
		"--enable-leader-election=false",
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		"--health-addr", health,
		"--log-level", "info",
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+api.Kubeconfig, "RUNTIME_NAMESPACE="+sc.Namespace)
	if len(trust) > 0 {
		var bundle []byte
		for _, f := range trust {
			pem, err := os.ReadFile(f)
			require.NoError(t, err)
			bundle = append(bundle, pem...)
		}
		file := filepath.Join(t.TempDir(), "ca-bundle.pem")
		require.NoError(t, os.WriteFile(file, bundle, 0o600))
		cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+file)
	}
	waitReadyz(t, "source-controller", health, startLogged(t, "source-controller", cmd))
	return sc
}

// waitReadyz waits until the Flux controller name, whose health endpoint is
// at health (host:port), answers /readyz with 200.
func waitReadyz(t testing.TB, name, health string, logs *LockedBuffer) {
	t.Helper()
	waitUntil(t, name, 60*time.Second, logs, func() bool {
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
