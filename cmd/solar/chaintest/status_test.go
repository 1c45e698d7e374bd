package chaintest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// buildAgent builds solar-agent once per test.
func buildAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "solar-agent")
	out, err := exec.Command("go", "build", "-o", bin, "../../solar-agent").CombinedOutput()
	require.NoError(t, err, "building solar-agent: %s", out)
	return bin
}

// agentKubeconfigs writes the two kubeconfigs of Target key's agent, as its
// Pod has them: the SolAr API server's, which the agent chart holds in a
// Secret, and the cluster's, with a token of the chart's ServiceAccount
// (bound to its read-only ClusterRole).
func (e *chainEnv) agentKubeconfigs(key string) (solar, cluster string) {
	e.t.Helper()
	ctx := context.Background()
	n := e.names[key]["solar-agent"]
	secret, err := e.api.Client.CoreV1().Secrets(n.TargetNamespace).Get(ctx, n.AppRelease+"-kubeconfig", metav1.GetOptions{})
	require.NoError(e.t, err, "%s: the agent chart's kubeconfig Secret", key)
	dir := e.t.TempDir()
	solar = filepath.Join(dir, "solar")
	require.NoError(e.t, os.WriteFile(solar, secret.Data["kubeconfig"], 0o600))
	tok, err := e.api.Client.CoreV1().ServiceAccounts(n.TargetNamespace).CreateToken(ctx, n.AppRelease,
		&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(e.t, err, "%s: a token of the agent chart's ServiceAccount", key)
	return solar, e.tokenKubeconfig(tok.Status.Token, filepath.Join(dir, "cluster"))
}

// tokenKubeconfig writes a kubeconfig of the API server with token to path.
func (e *chainEnv) tokenKubeconfig(token, path string) string {
	e.t.Helper()
	ca, err := os.ReadFile(e.api.CAFile)
	require.NoError(e.t, err)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: e.api.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["a"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "a"}
	cfg.CurrentContext = "c"
	require.NoError(e.t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// agentReport runs Target key's solar-agent once, as its Pod would.
func (e *chainEnv) agentReport(agentBin, key string) {
	e.t.Helper()
	solar, cluster := e.agentKubeconfigs(key)
	_, name, _ := strings.Cut(key, "/")
	out, err := exec.Command(agentBin, "--kubeconfig", solar, "--cluster-kubeconfig", cluster, "--target", name, "--once").CombinedOutput()
	require.NoError(e.t, err, "solar-agent --once for %s: %s", key, out)
}

// status runs solar status --exit-code for Target key and returns its exit
// code and the Target's status.
func (e *chainEnv) status(key string, extra ...string) (int, status.Target) {
	e.t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	code, stdout, stderr := e.solar(e.render.Password, append([]string{"status", e.examples, "-n", ns, "--target", name,
		"--registry", e.registry(), "--username", e.render.Username, "--password-stdin", "--ca-file", e.render.CAFile,
		"--kubeconfig", e.api.Kubeconfig, "--exit-code", "-o", "json"}, extra...)...)
	var doc struct{ Targets []status.Target }
	require.NoError(e.t, json.Unmarshal([]byte(stdout), &doc), "solar status: %s\n%s", stdout, stderr)
	require.Len(e.t, doc.Targets, 1, stderr)
	return code, doc.Targets[0]
}
