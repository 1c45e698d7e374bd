package ui

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/store"
)

// uiAccount is the UI's own ServiceAccount, with uiRules only.
const uiAccount = "system:serviceaccount:solar-system:solar-ui"

// uiRules are what the UI's own account holds, as config/ui/rbac.yaml
// gives them: the watch of what the pages show, and the questions it asks
// of RBAC. No Secret, no write.
func uiRules(t testing.TB) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "config", "ui", "rbac.yaml"))
	require.NoError(t, err)
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var role rbacv1.ClusterRole
		require.NoError(t, yaml.Unmarshal([]byte(doc), &role))
		if role.Kind == "ClusterRole" {
			return role.Rules
		}
	}
	t.Fatal("config/ui/rbac.yaml has no ClusterRole")
	return nil
}

// uiEnv is a real API server with Targets in alpha and beta and a Rollout
// in alpha, whose state is in a layout; alice may read alpha and act on its
// rollouts, bob may read alpha only, carol nothing.
type uiEnv struct {
	api    *testenv.APIServer
	dyn    dynamic.Interface
	server *Server
	http   *httptest.Server
	// requests counts the UI's requests to the API server (a watch is one).
	requests atomic.Int64
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func grant(t *testing.T, a *testenv.APIServer, name string, rules []rbacv1.PolicyRule, ns, user string) {
	t.Helper()
	ctx := context.Background()
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	_, err := a.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	if ns == "" {
		_, err = a.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{})
	} else {
		_, err = a.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{})
	}
	require.NoError(t, err)
}

func (e *uiEnv) create(t *testing.T, kind, ns, name string, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": api.APIVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
	_, err := e.dyn.Resource(kube.GVR(kind)).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
}

// startUI starts the UI over TLS; login, when set, is its OIDC login given
// its own callback URL.
func startUI(t *testing.T, login func(callback string) *OIDCOptions) *uiEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	a := testenv.StartAPIServer(t)
	a.CreateNamespaces(t, "alpha", "beta")
	dyn, err := dynamic.NewForConfig(a.Config)
	require.NoError(t, err)
	e := &uiEnv{api: a, dyn: dyn}
	target := map[string]any{"renderRegistryRef": map[string]any{"name": "r"}}
	for _, ns := range []string{"alpha", "beta"} {
		e.create(t, api.KindTarget, ns, ns+"-edge", target)
	}
	e.create(t, api.KindRollout, "alpha", "web", map[string]any{"waves": []any{map[string]any{"name": "all"}}})
	grant(t, a, "solar-ui", uiRules(t), "", uiAccount)
	read := []rbacv1.PolicyRule{{APIGroups: []string{api.Group}, Resources: []string{"targets", "targetreports", "rollouts"}, Verbs: []string{"get"}}}
	act := append(read, rbacv1.PolicyRule{APIGroups: []string{api.Group}, Resources: []string{"rollouts"}, Verbs: []string{"update"}})
	grant(t, a, "alice", act, "alpha", "alice")
	grant(t, a, "bob", read, "alpha", "bob")

	l, err := store.OpenLayout(context.Background(), filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	_, err = rolloutstore.Update(context.Background(), l, "alpha", "web", func(*rolloutstore.Doc) (*rolloutstore.Doc, error) {
		return &rolloutstore.Doc{State: rollout.State{Revision: "r1", Phase: rollout.Progressing}, From: map[string]string{},
			Decision: rollout.Decision{Phase: rollout.Progressing, Message: "wave all: 0 of 1 members passed, 1 needed",
				Members: []rollout.MemberDecision{{Name: "alpha-edge", Wave: "all", State: rollout.Admitted}}}}, nil
	}, rolloutstore.Options{})
	require.NoError(t, err)
	_, err = rolloutstore.Update(context.Background(), l, "beta", "web", func(*rolloutstore.Doc) (*rolloutstore.Doc, error) {
		return &rolloutstore.Doc{State: rollout.State{Revision: "r1", Phase: rollout.Progressing}, From: map[string]string{}}, nil
	}, rolloutstore.Options{})
	require.NoError(t, err)

	var handler http.Handler
	e.http = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	e.http.StartTLS()
	t.Cleanup(e.http.Close)
	cfg := rest.CopyConfig(a.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: uiAccount}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) { e.requests.Add(1); return rt.RoundTrip(r) })
	})
	opts := Options{Config: cfg, Store: l, Refresh: 200 * time.Millisecond, Log: slog.New(slog.NewTextHandler(testLog{t}, nil))}
	if login != nil {
		opts.OIDC = login(e.http.URL + "/auth/callback")
	}
	e.server, err = New(opts)
	require.NoError(t, err)
	handler = e.server.Handler()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = e.server.Run(ctx) }()
	select {
	case <-e.server.Ready():
	case <-time.After(time.Minute):
		t.Fatal("the UI's watch did not start")
	}
	return e
}

// as is a logged-in user's session cookie and CSRF token (what the login
// callback makes).
func (e *uiEnv) as(user string) (cookie *http.Cookie, csrf string) {
	w := httptest.NewRecorder()
	se := e.server.sessions.start(w, user, nil)
	return w.Result().Cookies()[0], se.CSRF
}

func (e *uiEnv) do(t *testing.T, c *http.Cookie, method, path string, form url.Values) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, e.http.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c != nil {
		req.AddCookie(c)
	}
	client := e.http.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

// TestPagesFollowRBAC (issue 51, done-when 2): a user sees what their own
// Kubernetes RBAC lets them get, nothing of another namespace, in pages and
// in the live stream; an action needs the session's CSRF token and update
// on the Rollout; every answer carries the security headers.
func TestPagesFollowRBAC(t *testing.T) {
	e := startUI(t, nil)
	alice, csrf := e.as("alice")
	bob, bobCSRF := e.as("bob")
	carol, _ := e.as("carol")

	code, body, h := e.do(t, alice, "GET", "/", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "alpha-edge")
	assert.NotContains(t, body, "beta", "alice may not see beta")
	assert.Contains(t, body, "/rollouts/alpha/web")
	assert.Contains(t, h.Get("Content-Security-Policy"), "script-src 'self'")
	assert.Equal(t, "DENY", h.Get("X-Frame-Options"))
	assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))

	code, body, _ = e.do(t, carol, "GET", "/", nil)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "No Target you may see")
	assert.NotContains(t, body, "edge")
	code, _, _ = e.do(t, alice, "GET", "/targets/beta/beta-edge", nil)
	assert.Equal(t, http.StatusNotFound, code, "a Target of beta reads as missing to alice")
	code, _, h = e.do(t, nil, "GET", "/", nil)
	assert.Equal(t, http.StatusSeeOther, code, "no session: to the login")
	assert.Equal(t, "/login", h.Get("Location"))

	code, body, _ = e.do(t, bob, "GET", "/rollouts/alpha/web", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.NotContains(t, body, "<button type=\"submit\">pause", "bob may not update it: no buttons")
	code, _, _ = e.do(t, bob, "POST", "/rollouts/alpha/web/pause", url.Values{"csrf": {bobCSRF}})
	assert.Equal(t, http.StatusForbidden, code, "bob may not update the Rollout")
	code, _, _ = e.do(t, alice, "POST", "/rollouts/alpha/web/pause", nil)
	assert.Equal(t, http.StatusForbidden, code, "no CSRF token")
	code, _, _ = e.do(t, alice, "POST", "/rollouts/alpha/web/pause", url.Values{"csrf": {bobCSRF}})
	assert.Equal(t, http.StatusForbidden, code, "another session's token")
	// A name that climbs out of alpha (%2F decodes to "/") names nothing.
	code, _, _ = e.do(t, alice, "POST", "/rollouts/alpha/x%2F..%2F..%2Fbeta%2Fsolar-rollout-web/pause", url.Values{"csrf": {csrf}})
	assert.Equal(t, http.StatusNotFound, code, "a path out of alpha")
	beta, err := rolloutstore.Read(context.Background(), e.server.opts.Store, "beta", "web")
	require.NoError(t, err)
	assert.False(t, beta.Paused, "beta's rollout untouched")
	code, body, _ = e.do(t, alice, "POST", "/rollouts/alpha/web/pause", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, code, body)
	doc, err := rolloutstore.Read(context.Background(), e.server.opts.Store, "alpha", "web")
	require.NoError(t, err)
	assert.True(t, doc.Paused, "alice paused it")
}

// TestLiveStreamFollowsRBAC: alice's stream carries alpha's changes and
// none of beta's: a Target created in beta, then one in alpha, and the
// first event she gets is alpha's.
func TestLiveStreamFollowsRBAC(t *testing.T) {
	e := startUI(t, nil)
	alice, _ := e.as("alice")
	req, err := http.NewRequest("GET", e.http.URL+"/events", nil)
	require.NoError(t, err)
	req.AddCookie(alice)
	resp, err := e.http.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	lines := bufio.NewScanner(resp.Body)
	require.True(t, lines.Scan()) // ": live"

	target := map[string]any{"renderRegistryRef": map[string]any{"name": "r"}}
	e.create(t, api.KindTarget, "beta", "beta-new", target)
	time.Sleep(time.Second) // beta's change is computed (and withheld) first
	e.create(t, api.KindTarget, "alpha", "alpha-new", target)
	var events []string
	for len(events) < 1 && lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "data: ") {
			events = append(events, l)
		}
	}
	require.NotEmpty(t, events)
	assert.Contains(t, events[0], `"name":"alpha-new"`)
	for _, ev := range events {
		assert.NotContains(t, ev, "beta", "a change of beta reached alice")
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// stream opens the live stream as c and returns its lines.
func (e *uiEnv) stream(t *testing.T, c *http.Cookie) *bufio.Scanner {
	t.Helper()
	req, err := http.NewRequest("GET", e.http.URL+"/events", nil)
	require.NoError(t, err)
	req.AddCookie(c)
	resp, err := e.http.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	lines := bufio.NewScanner(resp.Body)
	require.True(t, lines.Scan()) // ": live"
	return lines
}

// nextData is a stream's next event's data.
func nextData(lines *bufio.Scanner) string {
	for lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "data: ") {
			return l
		}
	}
	return ""
}

// TestHundredBrowsersCostOne (issue 51, done-when 3): a change reaches 100
// open pages of one user with no more requests to the API server than it
// costs with one page open: the pages read the UI's one watch, and RBAC's
// answer for the user is asked once.
func TestHundredBrowsersCostOne(t *testing.T) {
	e := startUI(t, nil)
	alice, _ := e.as("alice")
	target := map[string]any{"renderRegistryRef": map[string]any{"name": "r"}}
	cost := func(browsers int, name string) int64 {
		e.server.access.mu.Lock()
		clear(e.server.access.cache)
		e.server.access.mu.Unlock()
		streams := make([]*bufio.Scanner, browsers)
		for i := range streams {
			streams[i] = e.stream(t, alice)
		}
		before := e.requests.Load()
		e.create(t, api.KindTarget, "alpha", name, target)
		for i, s := range streams {
			require.Contains(t, nextData(s), `"name":"`+name+`"`, "page %d", i)
		}
		return e.requests.Load() - before // the create is the admin's, not counted
	}
	one := cost(1, "one")
	hundred := cost(100, "hundred")
	t.Logf("API requests for one change: %d with one page open, %d with 100", one, hundred)
	assert.Equal(t, one, hundred)
}

// TestIdentity: a login names the Kubernetes user as the API server would
// (the issuer's prefix by default) and never a system user or group.
func TestIdentity(t *testing.T) {
	l := &login{opts: OIDCOptions{UsernameClaim: "preferred_username", UsernamePrefix: "oidc:", GroupsClaim: "groups", GroupsPrefix: "oidc:"}}
	claims := func(name string, groups ...any) *oidc.IDTokenClaims {
		c := &oidc.IDTokenClaims{Claims: map[string]any{"groups": groups}}
		c.PreferredUsername = name
		return c
	}
	user, groups, err := l.identity(claims("alice", "ops", "system:masters"))
	require.NoError(t, err)
	assert.Equal(t, "oidc:alice", user)
	assert.Equal(t, []string{"oidc:ops", "oidc:system:masters"}, groups, "prefixed, no system group")
	l.opts.UsernamePrefix, l.opts.GroupsPrefix = "", ""
	_, groups, err = l.identity(claims("alice", "ops", "system:masters"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ops"}, groups, "system:masters dropped")
	_, _, err = l.identity(claims("system:admin"))
	assert.ErrorContains(t, err, "system user")
	_, _, err = l.identity(claims(""))
	assert.ErrorContains(t, err, "no claim preferred_username")
	l.opts.UsernameClaim = "email"
	c := claims("x")
	c.Email = "mallory@example.com"
	_, _, err = l.identity(c)
	assert.ErrorContains(t, err, "not verified")
}
