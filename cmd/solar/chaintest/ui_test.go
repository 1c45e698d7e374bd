package chaintest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/browser"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/internal/testkit/testpki"
	"github.com/solar-pipeline/solar/renderer/rollout"
)

// TestOperatorPageOnTheChain (issue 51, done-when 1, on the chain's real
// parts): examples/ published and installed by Flux down to each
// application, every agent reported; solar ui runs as a process under its
// own least-privilege account (config/ui/rbac.yaml) against that API server
// and registry. A real Chromium logs in through the test OpenID Provider,
// sees every Target of examples/ (those with an agent converged), follows one to its releases;
// then a Rollout of alpha (a canary, then the rest) takes a change to the
// agent release of both alpha Targets: the rollout page, open in the
// browser, shows the canary admitted; its pause button pauses the rollout;
// once Flux upgraded the canary, its agent reported and the next publish
// ran, the page shows the canary passed and the rollout paused (the rest
// held), without a reload; its resume button lets the next publish admit
// the rest, and the page shows that too. Screenshots are kept
// ($SOLAR_TEST_ARTIFACTS).
func TestOperatorPageOnTheChain(t *testing.T) {
	e := startChain(t, chainOptions{})
	events, err := e.settle(3 * time.Minute)
	require.NoError(t, err, "events: %v\nnot Ready: %v", events, e.notReadyHelmReleases())
	agent := buildAgent(t)
	agents := 0
	for _, tg := range e.targets { // examples/ gives beta no agent
		if _, ok := e.names[tg.ns+"/"+tg.name]["solar-agent"]; ok {
			e.agentReport(agent, tg.ns+"/"+tg.name)
			agents++
		}
	}
	require.Equal(t, 2, agents)

	op := testenv.StartOIDC(t)
	op.AddUser(t, "ops", "ops-password", "operators")
	for _, ns := range []string{"alpha", "beta"} {
		grantOperator(t, e, ns, "ops")
	}
	url, cert := e.startUI(t, op)
	b := browser.Start(t, op.Certificate(), cert)

	// The overview: every Target of examples/ by state, each namespace, the
	// Targets not converged (beta's).
	b.Do(t, chromedp.Navigate(url+"/"), browser.OIDCLogin("ops", "ops-password"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/namespaces/alpha"]`)))
	body := b.TextNow(`main`)
	assert.Contains(t, body, "Converged: 2", "alpha's Targets, whose agents reported: %s", body)
	assert.Contains(t, body, "Unknown: 2", "beta's, which have no agent: %s", body)
	assert.True(t, b.Has(`a[href="/namespaces/beta"]`), "beta listed")
	for _, name := range []string{"plant-1", "plant-2"} {
		assert.True(t, b.Has(`a[href="/targets/beta/`+name+`"]`), "beta/%s, not converged, listed", name)
	}
	assert.False(t, b.Has(`a[href="/targets/alpha/edge-1"]`), "a converged Target is on its namespace's page")
	b.Screenshot(t, "chain-overview")

	// A namespace: its Targets.
	// edge-1, converged, is on alpha's page only.
	b.Follow(t, `a[href="/namespaces/alpha"]`, `a[href="/targets/alpha/edge-1"]`)
	assert.True(t, b.Has(`a[href="/targets/alpha/edge-2"]`))
	b.Screenshot(t, "chain-namespace")

	// A Target: its releases, as the agent reported them.
	b.Follow(t, `a[href="/targets/alpha/edge-1"]`, `#releases`)
	var releases string // polled: chromedp's node ids of the page a click left may outlive it
	require.Eventually(t, func() bool { releases = b.TextNow(`#releases`); return strings.Contains(releases, "Ready") }, 20*time.Second, 100*time.Millisecond)
	for key := range e.names["alpha/edge-1"] {
		assert.Contains(t, releases, key)
	}
	assert.Contains(t, releases, "Ready", "what Flux says")
	b.Screenshot(t, "chain-target")
	rolloutByButtons(t, e, b, url, agent)
}

// rolloutByButtons is TestOperatorPageOnTheChain's rollout: the page open
// in b while publishes and Flux advance it, paused and resumed by its
// buttons.
func rolloutByButtons(t *testing.T, e *chainEnv, b *browser.Browser, url, agent string) {
	// A rollout of a change to both alpha Targets: the canary first.
	require.NoError(t, os.WriteFile(filepath.Join(e.examples, "alpha", "rollout.yaml"), []byte(`apiVersion: solar.opendefense.cloud/v1alpha1
kind: Rollout
metadata: {name: edge, namespace: alpha}
spec:
  waves:
    - {name: canary, count: 1, progressDeadline: 10m}
    - {name: rest, progressDeadline: 10m}
`), 0o644))
	// The UI shows the Rollouts the SolAr API server holds, as the
	// controller acts on them.
	e.kubectl("apply", "-f", filepath.Join(e.examples, "alpha", "rollout.yaml"))
	e.edit("alpha/releases.yaml", "targetNamespace: solar-system", "targetNamespace: solar-system\n  values:\n    interval: 2m")
	r := e.publishReport()
	require.Len(t, r.Rollouts, 1)
	canary := target(r, "edge-1")
	require.NotNil(t, canary.Rollout)
	require.Equal(t, rollout.Admitted, canary.Rollout.State)

	b.Do(t, chromedp.Navigate(url+"/rollouts/alpha/edge"), chromedp.WaitVisible(chromedp.CSS(`#members`)))
	require.Eventually(t, func() bool { return b.TextNow(`#live`) == "Live updates: on" }, 20*time.Second, 100*time.Millisecond,
		"the live stream did not connect")
	assert.Equal(t, member(b, "edge-1"), rollout.Admitted)
	assert.Equal(t, member(b, "edge-2"), rollout.Held)
	b.Screenshot(t, "chain-rollout-canary")

	// Pause by the button while the canary is tried.
	b.Do(t, chromedp.Click(chromedp.CSS(`form[action$="/pause"] button`)))
	require.Eventually(t, func() bool { return b.TextNow(`[data-field="flags"]`) == "paused" }, 30*time.Second, 100*time.Millisecond,
		"the page does not say paused")
	b.Screenshot(t, "chain-rollout-paused")

	// Flux upgrades the canary, its agent reports, the next publish passes
	// the canary and, paused, starts no wave: the open page follows.
	events, err := e.settle(3 * time.Minute)
	require.NoError(t, err, "events: %v\nnot Ready: %v", events, e.notReadyHelmReleases())
	e.agentReport(agent, "alpha/edge-1")
	r = e.publishReport()
	require.Len(t, r.Rollouts, 1)
	assert.Equal(t, rollout.Paused, r.Rollouts[0].Phase, "the button's pause reached the publish pass: %+v", r.Rollouts[0])
	assert.Equal(t, rollout.Held, target(r, "edge-2").Rollout.State)
	require.Eventually(t, func() bool {
		return member(b, "edge-1") == rollout.Passed && b.TextNow(`[data-field="phase"]`) == rollout.Paused
	}, 30*time.Second, 200*time.Millisecond, "the page did not show the canary passed and the rollout paused without a reload")
	assert.Equal(t, rollout.Held, member(b, "edge-2"))
	b.Screenshot(t, "chain-rollout-canary-passed")

	// Resume by the button: the next publish admits the rest.
	b.Do(t, chromedp.Click(chromedp.CSS(`form[action$="/resume"] button`)))
	require.Eventually(t, func() bool { return b.TextNow(`[data-field="flags"]`) == "no" }, 30*time.Second, 100*time.Millisecond,
		"the page still says paused")
	r = e.publishReport()
	require.Len(t, r.Rollouts, 1)
	require.NotNil(t, target(r, "edge-2").Rollout)
	assert.Equal(t, rollout.Admitted, target(r, "edge-2").Rollout.State, "%+v", r.Rollouts[0])
	require.Eventually(t, func() bool { return member(b, "edge-2") == rollout.Admitted }, 30*time.Second, 200*time.Millisecond,
		"the page did not show the rest admitted without a reload")
	b.Screenshot(t, "chain-rollout-rest")
}

// member is the state the rollout page shows for member name (its row's
// third cell), "" while there is no row of it.
func member(b *browser.Browser, name string) string {
	v, _ := browser.Now(b, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
  for (const tr of document.querySelectorAll("#members tbody tr")) {
    if (tr.children.length > 2 && tr.children[1].textContent === %q) return tr.children[2].textContent;
  }
  return "";
})()`, name)))
	return v
}

// grantOperator lets user read ns's Targets, reports and rollouts and act
// on its rollouts, as an operator's RoleBinding would.
func grantOperator(t *testing.T, e *chainEnv, ns, user string) {
	t.Helper()
	ctx := context.Background()
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{api.Group}, Resources: []string{"targets", "targetreports", "rollouts"}, Verbs: []string{"get"}},
		{APIGroups: []string{api.Group}, Resources: []string{"rollouts"}, Verbs: []string{"update"}},
	}
	_, err := e.api.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "operator"}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.api.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "operator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "operator"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// startUI runs solar ui as a process, as an operator runs it: over TLS on
// 127.0.0.1, under the solar-ui ServiceAccount of config/ui/rbac.yaml
// (applied with kubectl, a token of it in the UI's kubeconfig), logged in
// to the render registry, users logging in at op. It returns the UI's URL
// and certificate.
func (e *chainEnv) startUI(t *testing.T, op *testenv.OIDC) (string, *x509.Certificate) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := e.uiKubeconfig(t, dir)
	der, key, err := testpki.SelfSigned(time.Now())
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, b, 0o600))
		return path
	}
	certFile := write("ui.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyFile := write("ui-key.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	opCA := write("op.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: op.Certificate().Raw}))
	listen := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	url := "https://" + listen
	id, secret := op.AddClient(t, url+"/auth/callback")
	secretFile := write("client-secret", []byte(secret))

	cmd := exec.Command(e.bin, "ui", "--registry", e.registry(), "--username", e.render.Username, "--password-stdin",
		"--ca-file", e.render.CAFile, "--kubeconfig", kubeconfig, "--listen", listen, "--tls-cert", certFile, "--tls-key", keyFile,
		"--oidc-issuer", op.Issuer, "--oidc-client-id", id, "--oidc-client-secret-file", secretFile, "--oidc-ca-file", opCA,
		"--oidc-username-claim", "preferred_username", "--oidc-username-prefix", "-", "--refresh", "1s")
	cmd.Stdin = strings.NewReader(e.render.Password)
	logs := &testenv.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		out := logs.String()
		assert.NotContains(t, out, secret, "the client secret is never printed")
		assert.NotContains(t, out, e.render.Password, "the registry password is never printed")
		t.Logf("solar ui:\n%s", out)
	})
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	require.Eventually(t, func() bool {
		resp, err := client.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "solar ui did not serve: %s", logs)
	return url, cert
}

// uiKubeconfig applies config/ui/rbac.yaml and writes a kubeconfig with a
// token of its ServiceAccount: the UI holds exactly those rights.
func (e *chainEnv) uiKubeconfig(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	_, err := e.api.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "solar-system"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) { // the agents' namespace on this one API server
		require.NoError(t, err)
	}
	e.kubectl("apply", "-f", filepath.Join(testenv.Root(t), "config", "ui", "rbac.yaml"))
	tok, err := e.api.Client.CoreV1().ServiceAccounts("solar-system").CreateToken(ctx, "solar-ui",
		&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return e.tokenKubeconfig(tok.Status.Token, filepath.Join(dir, "ui.kubeconfig"))
}

// kubectl runs kubectl on the API server as its admin.
func (e *chainEnv) kubectl(args ...string) {
	e.t.Helper()
	out, err := exec.Command(testenv.Tool(e.t, "kubectl"), append([]string{"--kubeconfig", e.api.Kubeconfig}, args...)...).CombinedOutput()
	require.NoError(e.t, err, "kubectl %s: %s", strings.Join(args, " "), out)
}
