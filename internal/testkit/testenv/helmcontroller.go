package testenv

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StartHelmController runs a real Flux helm-controller binary (bin) against
// the API server, with its stock settings (--concurrent 4, no leader
// election, every namespace watched). helm-controller's module is not served
// by the module proxy, so CI cannot build it: only recording runs it (see
// internal/testkit/helmdriver's conformance test).
func StartHelmController(t testing.TB, api *APIServer, bin string) {
	t.Helper()
	health := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	cmd := exec.Command(bin,
		"--enable-leader-election=false",
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		"--health-addr", health,
		"--log-level", "info",
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+api.Kubeconfig, "RUNTIME_NAMESPACE=flux-system")
	waitReadyz(t, "helm-controller", health, startLogged(t, "helm-controller", cmd))
}

// PushChart packages dir as the chart name at version with the real helm CLI
// and pushes it to oci://<reg.Host>/<path>/<name> (over plain HTTP when reg
// has no TLS). A dir without a
// Chart.yaml gets one naming name and version (appVersion the same).
func PushChart(t testing.TB, reg *Registry, dir, path, name, version string) {
	t.Helper()
	work := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(work, name), os.DirFS(dir)))
	chartYAML := filepath.Join(work, name, "Chart.yaml")
	if _, err := os.Stat(chartYAML); os.IsNotExist(err) {
		require.NoError(t, os.WriteFile(chartYAML, fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: %s\nappVersion: %q\n", name, version, version), 0o644))
	}
	Helm(t, "package", filepath.Join(work, name), "-d", work)
	// A registry without TLS is spoken to over plain HTTP.
	tls := []string{"--plain-http"}
	if reg.CAFile != "" {
		tls = []string{"--ca-file", reg.CAFile}
	}
	Helm(t, append([]string{"push", filepath.Join(work, fmt.Sprintf("%s-%s.tgz", name, version)), "oci://" + reg.Host + "/" + path,
		"--username", reg.Username, "--password", reg.Password}, tls...)...)
}

// PullSecret is a dockerconfigjson Secret for reg.
func PullSecret(reg *Registry, namespace, name string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	config := fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q,"auth":%q}}}`, reg.Host, reg.Username, reg.Password, auth)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)},
	}
}
