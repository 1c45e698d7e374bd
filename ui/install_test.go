package ui

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/browser"
	"github.com/solar-pipeline/solar/internal/testkit/imagetest"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/internal/testkit/testpki"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/store"
)

// TestUIInstalledFromItsManifests (issue 51): Solar's own solar image,
// built by internal/imagebuild and published with the publish path,
// installed with config/ui (kubectl apply -k, through an overlay) on a real
// node, serves solar ui: a real headless Chromium logs in through the test
// OpenID provider to the Pod and sees the overview of what alice may see,
// the Target of alpha and the rollout whose state the UI read from the
// registry with its login from Secret solar-ui-registry (nothing of beta).
// The Pod runs as 65532 under ServiceAccount solar-ui (in-cluster config),
// with no capability, no new privileges, seccomp and a read-only root; the
// account holds config/ui/rbac.yaml's rights and no others (no Secret). The
// OIDC client secret, mounted from a Secret, is in no argument and not in
// the Pod's log.
//
// The test's overlay changes what a test machine needs: the host's network
// (the registry and the provider listen on 127.0.0.1 only), the real node,
// the test registry (plain HTTP), the test provider and its CA, and the
// user name claim the test's RBAC names alice by. Every other argument is
// the base's.
func TestUIInstalledFromItsManifests(t *testing.T) {
	testenv.SkipUnlessNodeCan(t)
	api := testenv.StartCluster(t)
	images := testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true})
	node := testenv.StartNode(t, api, images)
	image := imagetest.Publish(t, images, "solar")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	op := testenv.StartOIDC(t)
	op.AddUser(t, "alice", "alice-password", "operators")
	port := testenv.FreePort(t)
	uiURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	clientID, clientSecret := op.AddClient(t, uiURL+"/auth/callback")

	seedInstalledUI(t, api, reg)
	uiCert := createUISecrets(t, api, reg, op, clientSecret)
	kubectl(t, api, "apply", "-k", uiOverlay(t, image, node.Name, map[string]string{
		"--registry": reg.Host + "/solar", "--listen": fmt.Sprintf(":%d", port), "--oidc-issuer": op.Issuer,
		"--oidc-client-id": clientID, "--oidc-redirect-url": uiURL + "/auth/callback",
	}, "--plain-http", "--oidc-ca-file=/etc/solar-ui/oidc/ca.pem", "--oidc-username-claim=preferred_username",
		"--oidc-username-prefix=-"))
	pod := waitUIReady(t, api, 3*time.Minute)
	assert.Equal(t, image, pod.Spec.Containers[0].Image, "the manifests name the published image by digest")
	assert.Equal(t, node.Name, pod.Spec.NodeName)
	assert.Equal(t, "solar-ui", pod.Spec.ServiceAccountName)
	assertServiceSelects(t, api, pod)

	b := browser.Start(t, op.Certificate(), uiCert)
	b.Do(t, chromedp.Navigate(uiURL+"/"), browser.OIDCLogin("alice", "alice-password"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/targets/alpha/alpha-edge"]`)))
	body := b.TextNow(`main`)
	assert.Contains(t, body, "alpha-edge")
	assert.Contains(t, body, "nothing published for it", "the registry answered the UI's login (no denial)")
	assert.Contains(t, body, "wave all: 0 of 1 members passed", "the rollout's state, read from the registry with the UI's login")
	assert.Contains(t, body, rollout.Progressing)
	assert.NotContains(t, body, "beta")
	b.Screenshot(t, "overview")

	assertHealthzRevealsNothing(t, uiURL, uiCert)
	assertUIProcessConfined(t, clientID)
	assertUIRights(t, api)
	logs, err := api.Client.CoreV1().Pods("solar-system").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	require.NoError(t, err)
	t.Logf("the UI's log:\n%s", logs)
	assert.NotContains(t, string(logs), clientSecret, "the client secret in the UI's log")
	spec, err := json.Marshal(pod)
	require.NoError(t, err)
	assert.NotContains(t, string(spec), clientSecret, "the client secret in the Pod (an argument or a variable)")
	now, err := api.Client.CoreV1().Pods("solar-system").Get(context.Background(), pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, now.Status.ContainerStatuses, 1)
	assert.Zero(t, now.Status.ContainerStatuses[0].RestartCount, "the UI restarted (its liveness probe failed, or it exited)")
}

// seedInstalledUI makes what the pages show: a Target in alpha and one in
// beta, a Rollout in alpha with its state in reg (written with reg's
// login), and alice's right to read alpha.
func seedInstalledUI(t *testing.T, a *testenv.APIServer, reg *testenv.Registry) {
	t.Helper()
	ctx := context.Background()
	a.CreateNamespaces(t, "solar-system", "alpha", "beta")
	dyn, err := dynamic.NewForConfig(a.Config)
	require.NoError(t, err)
	create := func(kind, ns, name string, spec map[string]any) {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": api.APIVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
		_, err := dyn.Resource(kube.GVR(kind)).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, ns := range []string{"alpha", "beta"} {
		create(api.KindTarget, ns, ns+"-edge", map[string]any{"renderRegistryRef": map[string]any{"name": "r"}})
	}
	create(api.KindRollout, "alpha", "web", map[string]any{"waves": []any{map[string]any{"name": "all"}}})
	read := []rbacv1.PolicyRule{{APIGroups: []string{api.Group}, Resources: []string{"targets", "targetreports", "rollouts"}, Verbs: []string{"get"}}}
	grant(t, a, "alice", read, "alpha", "alice")

	remote, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	_, err = rolloutstore.Update(ctx, remote, "alpha", "web", func(*rolloutstore.Doc) (*rolloutstore.Doc, error) {
		return &rolloutstore.Doc{State: rollout.State{Revision: "r1", Phase: rollout.Progressing}, From: map[string]string{},
			Decision: rollout.Decision{Phase: rollout.Progressing, Message: "wave all: 0 of 1 members passed, 1 needed",
				Members: []rollout.MemberDecision{{Name: "alpha-edge", Wave: "all", State: rollout.Admitted}}}}, nil
	}, rolloutstore.Options{})
	require.NoError(t, err)
}

// createUISecrets makes the Secrets config/ui mounts: the UI's certificate
// (for 127.0.0.1, returned to trust), the OIDC client's secret with the
// provider's CA, and the registry login as a docker config.
func createUISecrets(t *testing.T, a *testenv.APIServer, reg *testenv.Registry, op *testenv.OIDC, clientSecret string) *x509.Certificate {
	t.Helper()
	der, key, err := testpki.SelfSigned(time.Now())
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	ca, err := os.ReadFile(op.CAFile)
	require.NoError(t, err)
	auth := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "solar-ui-tls"}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{
			"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), "tls.key": ecKeyPEM(t, key)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "solar-ui-oidc"}, StringData: map[string]string{"client-secret": clientSecret, "ca.pem": string(ca)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "solar-ui-registry"},
			StringData: map[string]string{"config.json": `{"auths":{"` + reg.Host + `":{"auth":"` + auth + `"}}}`}},
	} {
		_, err := a.Client.CoreV1().Secrets("solar-system").Create(context.Background(), s, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return cert
}

func ecKeyPEM(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	b, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: b})
}

// uiOverlay writes a kustomization over config/ui: the image by digest, on
// node with the host's network, and the base's arguments with the values
// of set (each flag must be in the base) and extra appended.
func uiOverlay(t *testing.T, image, node string, set map[string]string, extra ...string) string {
	t.Helper()
	root := testenv.Root(t)
	raw, err := os.ReadFile(filepath.Join(root, "config", "ui", "deployment.yaml"))
	require.NoError(t, err)
	var d appsv1.Deployment
	require.NoError(t, yaml.Unmarshal(raw, &d))
	used := map[string]bool{}
	var args []string
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		flag, _, _ := strings.Cut(arg, "=")
		if v, ok := set[flag]; ok {
			arg, used[flag] = flag+"="+v, true
		}
		args = append(args, arg)
	}
	for flag := range set {
		require.True(t, used[flag], "config/ui/deployment.yaml passes no %s", flag)
	}
	args = append(args, extra...)
	argsJSON, err := json.Marshal(args)
	require.NoError(t, err)
	_, listen, _ := strings.Cut(set["--listen"], ":")
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(root, "config", "ui"))
	require.NoError(t, err)
	name, digest, _ := strings.Cut(image, "@")
	require.NoError(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), fmt.Appendf(nil, `resources:
  - %s
images:
  - name: solar
    newName: %s
    digest: %s
patches:
  - target: {kind: Deployment, name: solar-ui}
    patch: |
      - {op: add, path: /spec/template/spec/hostNetwork, value: true}
      - {op: add, path: /spec/template/spec/nodeSelector, value: {kubernetes.io/hostname: %s}}
      - {op: replace, path: /spec/template/spec/containers/0/args, value: %s}
      - {op: replace, path: /spec/template/spec/containers/0/ports, value: [{name: https, containerPort: %s}]}
`, base, name, digest, node, argsJSON, listen), 0o644))
	return overlay
}

// waitUIReady waits until the UI's one Pod is Ready (its readiness probe,
// /healthz over HTTPS, answers) and returns it.
func waitUIReady(t *testing.T, a *testenv.APIServer, timeout time.Duration) corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var pod corev1.Pod
	ready := func() bool {
		pods, err := a.Client.CoreV1().Pods("solar-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=solar-ui"})
		if err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = pods.Items[0]
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	deadline := time.Now().Add(timeout)
	for !ready() {
		if time.Now().After(deadline) {
			logs, _ := a.Client.CoreV1().Pods("solar-system").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			st, _ := json.MarshalIndent(pod.Status, "", "  ")
			t.Fatalf("the UI's Pod %s is not Ready after %s:\n%s\nits log:\n%s", pod.Name, timeout, st, logs)
		}
		time.Sleep(time.Second)
	}
	return pod
}

// assertServiceSelects: Service solar-ui selects pod and sends to a port
// of its container, as the endpoint controllers (which the test cluster
// does not run: no traffic is routed) would see it.
func assertServiceSelects(t *testing.T, a *testenv.APIServer, pod corev1.Pod) {
	t.Helper()
	svc, err := a.Client.CoreV1().Services("solar-system").Get(context.Background(), "solar-ui", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, svc.Spec.Selector)
	for k, v := range svc.Spec.Selector {
		assert.Equal(t, v, pod.Labels[k], "the Service selects %s=%s", k, v)
	}
	require.Len(t, svc.Spec.Ports, 1)
	target := svc.Spec.Ports[0].TargetPort.String()
	assert.True(t, slices.ContainsFunc(pod.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == target }),
		"the Service's targetPort %s names no port of the UI's container", target)
}

// assertHealthzRevealsNothing: /healthz answers anyone with "ok" only;
// the pages send a stranger to the login.
func assertHealthzRevealsNothing(t *testing.T, uiURL string, cert *x509.Certificate) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(uiURL + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "ok\n", string(body))
	res, err = c.Get(uiURL + "/")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusSeeOther, res.StatusCode)
	assert.Equal(t, "/login", res.Header.Get("Location"))
}

// assertUIProcessConfined finds the UI's process on this machine (the
// node's) by its client id and reads what the kernel says of it.
func assertUIProcessConfined(t *testing.T, clientID string) {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	var proc string
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if err == nil && len(args) > 1 && args[1] == "ui" && strings.Contains(string(cmdline), "--oidc-client-id="+clientID+"\x00") {
			proc = d
			break
		}
	}
	require.NotEmpty(t, proc, "no process of solar ui with client id %s", clientID)
	status, err := os.ReadFile(filepath.Join(proc, "status"))
	require.NoError(t, err)
	for _, want := range []string{"Uid:\t65532\t65532\t65532\t65532\n", "Gid:\t65532\t65532\t65532\t65532\n",
		"CapEff:\t0000000000000000\n", "CapPrm:\t0000000000000000\n", "CapBnd:\t0000000000000000\n",
		"NoNewPrivs:\t1\n", "Seccomp:\t2\n"} {
		assert.Contains(t, string(status), want, "/proc/PID/status of solar ui")
	}
	mounts, err := os.ReadFile(filepath.Join(proc, "mountinfo"))
	require.NoError(t, err)
	root := false
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == "/" {
			root = true
			assert.True(t, strings.HasPrefix(f[5], "ro"), "the root filesystem is mounted %s", f[5])
		}
	}
	assert.True(t, root, "no root in the UI's mountinfo")
}

// assertUIRights: ServiceAccount solar-ui may do what config/ui/rbac.yaml
// grants, and nothing of the rest asked here.
func assertUIRights(t *testing.T, a *testenv.APIServer) {
	t.Helper()
	canI := func(args ...string) bool {
		cmd := exec.Command(testenv.Tool(t, "kubectl"), append([]string{"--kubeconfig", a.Kubeconfig, "auth", "can-i",
			"--as", uiAccount}, args...)...)
		out, err := cmd.CombinedOutput()
		answer := strings.TrimSpace(string(out))
		require.Contains(t, []string{"yes", "no"}, answer, "kubectl auth can-i %s: %v", strings.Join(args, " "), err)
		return answer == "yes"
	}
	for _, r := range uiRules(t) {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					assert.True(t, canI(v, res+"."+g, "-A"), "solar-ui may %s %s.%s", v, res, g)
				}
			}
		}
	}
	for _, q := range [][]string{
		{"get", "secrets", "-n", "solar-system"}, {"list", "secrets", "-A"}, {"get", "secrets", "-n", "alpha"},
		{"get", "targets." + api.Group, "-n", "alpha"}, {"update", "rollouts." + api.Group, "-n", "alpha"},
		{"create", "targets." + api.Group, "-n", "alpha"}, {"list", "pods", "-A"}, {"create", "serviceaccounts", "--subresource=token", "-n", "solar-system"},
		{"create", "localsubjectaccessreviews.authorization.k8s.io", "-n", "alpha"},
	} {
		assert.False(t, canI(q...), "solar-ui may %s", strings.Join(q, " "))
	}
}

// kubectl runs kubectl as the cluster's admin.
func kubectl(t *testing.T, a *testenv.APIServer, args ...string) string {
	t.Helper()
	out, err := exec.Command(testenv.Tool(t, "kubectl"), append([]string{"--kubeconfig", a.Kubeconfig}, args...)...).CombinedOutput()
	require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	return string(out)
}
