package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// request is one line --debug logs for a request.
type request struct {
	method, path, status string
}

// requests are the request lines of stderr to base (scheme://host), in order.
func requests(stderr, base string) []request {
	re := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3} DEBUG ([A-Z]+) ` + regexp.QuoteMeta(base) +
		`(/\S*) status=(\d{3}) duration=[0-9.]+(?:ns|µs|ms|s)(?: sent=\d+)?(?: received=\d+)?$`)
	var out []request
	for _, m := range re.FindAllStringSubmatch(stderr, -1) {
		out = append(out, request{m[1], m[2], m[3]})
	}
	return out
}

// seen says whether a request of method to a path matching path got status.
func seen(reqs []request, method, path, status string) bool {
	re := regexp.MustCompile(path)
	for _, r := range reqs {
		if r.method == method && re.MatchString(r.path) && r.status == status {
			return true
		}
	}
	return false
}

// summary is each method, path (without the query) and status of reqs once,
// a line each.
func summary(reqs []request) string {
	var lines []string
	for _, r := range reqs {
		path, _, _ := strings.Cut(r.path, "?")
		lines = append(lines, r.method+" "+path+" "+r.status)
	}
	slices.Sort(lines)
	return strings.Join(slices.Compact(lines), "\n")
}

// TestDebugPublish: solar publish --debug says every request to a real
// registry with basic auth, one line each with its status, on stderr; stdout
// is what it is without --debug, and no credential shows.
func TestDebugPublish(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	args := []string{"--no-credentials", "--ca-file", reg.CAFile, "--registry", reg.Host + "/solar", "../../examples"}
	secrets := []string{reg.Password, base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))}

	code, stdout, stderr := publishCLI(t, reg, reg.Password, append([]string{"--debug"}, args...)...)
	require.Equal(t, 0, code, stderr)
	reqs := requests(stderr, "https://"+reg.Host)
	require.NotEmpty(t, reqs, stderr)
	for _, want := range []request{
		{"GET", `^/v2/solar/[a-z]+/solar-index/tags/list$`, "401"}, // the challenge, before the credentials
		{"GET", `^/v2/solar/alpha/solar-index/tags/list$`, "404"},  // no index yet
		{"GET", `^/v2/_catalog\?`, "200"},
		{"POST", `^/v2/solar/alpha/bootstrap-edge-1/blobs/uploads/$`, "202"},
		{"PUT", `^/v2/solar/alpha/bootstrap-edge-1/blobs/uploads/[^?]+\?.*digest=sha256`, "201"},
		{"HEAD", `^/v2/solar/alpha/bootstrap-edge-1/manifests/0\.0\.1$`, "404"},
		{"PUT", `^/v2/solar/alpha/bootstrap-edge-1/manifests/0\.0\.1$`, "201"},
		{"HEAD", `^/v2/solar/alpha/bootstrap-edge-1/manifests/0\.0\.1$`, "200"},
	} {
		assert.True(t, seen(reqs, want.method, want.path, want.status), "%v in\n%s", want, summary(reqs))
	}
	assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d\.\d{3} INFO  loaded objects=`, stderr, "what -v logs too")
	assert.NotContains(t, stdout, "DEBUG")
	assert.NotContains(t, stdout, reg.Host+"/v2/")
	assertNoSecret(t, "stderr", stderr, secrets)
	for _, s := range []string{"Authorization", "Basic ", "Bearer "} {
		assert.NotContains(t, stderr, s)
	}

	// Nothing left to publish: the same stdout with -d as without.
	code, plain, stderr := publishCLI(t, reg, reg.Password, args...)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "DEBUG")
	code, debug, stderr := publishCLI(t, reg, reg.Password, append([]string{"-d"}, args...)...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, plain, debug)
	reqs = requests(stderr, "https://"+reg.Host)
	assert.True(t, seen(reqs, "GET", `^/v2/solar/alpha/solar-index/blobs/sha256:[0-9a-f]{64}$`, "200"), "the namespace index answers: %s", summary(reqs))
	assertNoSecret(t, "stderr", stderr, secrets)
}

// TestDebugAPIServer: credentials sync --debug says every request to a real
// API server, and neither the kubeconfig's bearer token nor a minted one.
func TestDebugAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	s := testenv.StartAPIServer(t)
	s.CreateNamespaces(t, "alpha", "beta")
	code, stdout, stderr := solar(t, "credentials", "sync", "--debug", "--kubeconfig", s.Kubeconfig, "../../examples")
	require.Equal(t, 0, code, stderr)
	reqs := requests(stderr, s.URL)
	require.NotEmpty(t, reqs, stderr)
	assert.True(t, seen(reqs, "POST", `^/api/v1/namespaces/alpha/serviceaccounts/[^/]+/token$`, "201"), "%v", reqs)
	assert.True(t, seen(reqs, "GET", `^/apis/solar\.opendefense\.cloud/v1alpha1/namespaces/alpha/targets/edge-1$`, "404"), "%v", reqs)
	assert.NotContains(t, stdout, "DEBUG")

	require.NotEmpty(t, s.Config.BearerToken)
	secrets := append([]string{s.Config.BearerToken}, testenv.AgentTokens(t, s, "alpha")...)
	require.Len(t, secrets, 3, "the admin's token and those of edge-1 and edge-2")
	assertNoSecret(t, "stderr", stderr, secrets)
	assert.NotContains(t, stderr, "Bearer ")
}

// TestDebugFlags: -d is --debug on every command (no command has a -d of its
// own), it logs what -v does, and it does not go with -q.
func TestDebugFlags(t *testing.T) {
	g := &globals{level: new(slog.LevelVar)}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.InheritedFlags() // merges the persistent flags: a second -d panics
		f := c.Flags().ShorthandLookup("d")
		if assert.NotNil(t, f, c.CommandPath()) {
			assert.Equal(t, "debug", f.Name, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(g, g.level))

	code, _, stderr := solar(t, "vet", "--debug", "-q", "../../examples")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--debug and --quiet: choose one")

	code, _, stderr = solar(t, "vet", "-d", "../../examples")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d\.\d{3} INFO  loaded objects=\d+ errors=0 warnings=1$`, stderr)
}

// TestDebugTransport: a request's line says the method, the URL, the status,
// the duration and the bytes, never a header; a failed one its error; none
// below debug.
func TestDebugTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "cookie-secret"})
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"token":"body-secret"}`))
	}))
	defer srv.Close()
	var buf bytes.Buffer
	level := new(slog.LevelVar)
	level.Set(slog.LevelDebug)
	client := &http.Client{Transport: logRequests(slog.New(newLogHandler(&buf, level)))(http.DefaultTransport)}
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/v2/a/blobs/uploads/1?digest=sha256:ab&scope=repository:a:push", strings.NewReader("data"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer header-secret")
	req.AddCookie(&http.Cookie{Name: "c", Value: "request-cookie-secret"})
	resp, err := client.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3} DEBUG PUT `+regexp.QuoteMeta(srv.URL+"/v2/a/blobs/uploads/1?digest=sha256:ab&scope=repository:a:push")+
		` status=201 duration=[0-9.]+(ns|µs|ms|s) sent=4 received=23\n$`, buf.String())
	assert.NotContains(t, buf.String(), "secret")

	buf.Reset()
	srv.Close()
	_, err = client.Get(srv.URL + "/v2/")
	require.Error(t, err)
	assert.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3} DEBUG GET `+regexp.QuoteMeta(srv.URL)+`/v2/ error=".*refused.*" duration=\S+\n$`, buf.String())

	buf.Reset()
	level.Set(slog.LevelInfo)
	_, _ = client.Get(srv.URL + "/v2/")
	assert.Empty(t, buf.String(), "not at info")
}

// TestDebugURL: no user information, and no value of a query parameter that
// may be a secret (pre-signed blob URLs carry them); the others as sent.
func TestDebugURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@registry.example.com/v2/?scope=repository%3Aa%3Apull&service=registry":                                                  "https://registry.example.com/v2/?scope=repository%3Aa%3Apull&service=registry",
		"https://s3.example.com/b/blob?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F1&X-Amz-Signature=ab12&X-Amz-Security-Token=t0k": "https://s3.example.com/b/blob?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Security-Token=REDACTED",
		"https://blob.example.com/c/b?sv=2022-11-02&sig=abc%2Bd&se=2030":                                                                         "https://blob.example.com/c/b?sv=2022-11-02&sig=REDACTED&se=2030",
		"https://h/x?access_token=t&password&api%5Fkey=k&n=10":                                                                                   "https://h/x?access_token=REDACTED&password=REDACTED&api%5Fkey=REDACTED&n=10",
		"https://127.0.0.1:6443/api/v1/namespaces/alpha/secrets?labelSelector=a%3Db&limit=500":                                                   "https://127.0.0.1:6443/api/v1/namespaces/alpha/secrets?labelSelector=a%3Db&limit=500",
	} {
		u, err := url.Parse(in)
		require.NoError(t, err)
		assert.Equal(t, want, redactedURL(u), in)
	}
}
