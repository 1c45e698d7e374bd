package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// pushBlob uploads b to the registry's repository (the distribution API: a
// monolithic upload, POST then PUT) and returns the URL a device downloads.
func pushBlob(t *testing.T, r *testenv.Registry, repo string, b []byte) string {
	t.Helper()
	pem, err := os.ReadFile(r.CAFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: time.Minute}
	base := "https://" + r.Host + "/v2/" + repo + "/blobs/"
	do := func(method, u string, body []byte, want int) *http.Response {
		req, err := http.NewRequest(method, u, bytes.NewReader(body))
		require.NoError(t, err)
		req.SetBasicAuth(r.Username, r.Password)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "%s %s", method, u)
		return resp
	}
	loc, err := do(http.MethodPost, base+"uploads/", nil, http.StatusAccepted).Location()
	require.NoError(t, err)
	q := loc.Query()
	q.Set("digest", digestOf(b))
	loc.RawQuery = q.Encode()
	do(http.MethodPut, loc.String(), b, http.StatusCreated)
	return base + digestOf(b)
}

// attemptFrom is a sealed attempt of v2 from u.
func attemptFrom(t *testing.T, u, notAfter string) wire.Attempt {
	t.Helper()
	b := builds["v2"]
	a, err := wire.Attempt{DeviceID: "dev-1", TargetVersion: "2.0.0", NotAfter: notAfter, Artifact: wire.Artifact{
		URL: u, Digest: digestOf(b), Size: int64(len(b)), Platform: "linux/amd64"}}.Seal()
	require.NoError(t, err)
	return a
}

// TestRegistryLogin: the agent pushed to a real registry (Distribution, TLS,
// htpasswd) that requires a login. Without --credentials the download answers
// 401: retried (download-retrying, the 401 in the reason) until the attempt
// expires, the digest not failed. With --credentials the next attempt
// commits. No secret appears in the logs, the outcomes or the journal.
func TestRegistryLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a registry, updater and agent processes")
	}
	r := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	u := pushBlob(t, r, "fleet/agent", builds["v2"])
	d := newDevice(t, &artifactServer{caFile: r.CAFile}, nil, fastRetries...)
	secrets := []string{r.Password, base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))}
	var seen outcomes
	var logs bytes.Buffer

	o, ok := d.runSeeing(t, "", attemptFrom(t, u, time.Now().Add(6*time.Second).UTC().Format(time.RFC3339)), seen.add, &logs)
	require.True(t, ok)
	assert.Equal(t, wire.StateRefused, o.State)
	assert.Contains(t, o.Reason, "expired while retrying: GET "+u+": 401 Unauthorized")
	retries := seen.of(wire.StateDownloadRetrying)
	require.NotEmpty(t, retries)
	assert.Contains(t, retries[0].Reason, "401 Unauthorized")
	assert.Empty(t, journalOf(t, d.paths).Failed)

	d.extra = append(d.extra, "--credentials", credentialsFile(t, map[string][2]string{r.Host: {r.Username, r.Password}}))
	o, ok = d.runSeeing(t, "", attemptFrom(t, u, ""), seen.add, &logs)
	require.True(t, ok)
	require.Equal(t, wire.PhaseCommitted, o.State, "%s\n%s", o.Reason, logs.String())
	assert.Equal(t, "v2", running(t, d.paths, builds))
	journal, err := os.ReadFile(d.paths.Journal())
	require.NoError(t, err)
	noSecret(t, "the logs", logs.String(), secrets...)
	noSecret(t, "the journal", string(journal), secrets...)
	for _, x := range seen.list {
		noSecret(t, "an outcome", x.Reason, secrets...)
	}
}

// recorder is a TLS test server that records the Authorization header of
// every request.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func startRecorder(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int)) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.auths = append(rec.auths, r.Header.Get("Authorization"))
		n := len(rec.auths)
		rec.mu.Unlock()
		h(w, r, n)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) seen() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.auths...)
}

func (rec *recorder) reset() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.auths = nil
}

func serveBlob(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	_, _ = w.Write(b)
}

// TestRedirectLoginStaysHome: the registry redirects the blob to its storage
// on another host (here the same IP, another port: Go's own redirect rule
// would forward an Authorization header there). The login goes to the
// registry only; the storage gets none, and the storage's presigned query
// shows in no outcome when the storage fails once.
func TestRedirectLoginStaysHome(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs updater and agent processes")
	}
	b := builds["v2"]
	storage := startRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 { // the first time, the connection drops before an answer
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		serveBlob(w, b)
	})
	registry := startRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "device" || pass != "pull-s3cret" {
			http.Error(w, "login", http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, storage.URL+"/blob?X-Amz-Signature=presigned-s3cret", http.StatusTemporaryRedirect)
	})
	d := newDevice(t, &artifactServer{caFile: startArtifactServer(t).caFile}, nil, fastRetries...)
	d.extra = append(d.extra, "--credentials", credentialsFile(t, map[string][2]string{registry.Listener.Addr().String(): {"device", "pull-s3cret"}}))
	var seen outcomes
	var logs bytes.Buffer
	o, ok := d.runSeeing(t, "", attemptFrom(t, registry.URL+"/v2/fleet/agent/blobs/"+digestOf(b), ""), seen.add, &logs)
	require.True(t, ok)
	require.Equal(t, wire.PhaseCommitted, o.State, "%s\n%s", o.Reason, logs.String())
	for _, a := range registry.seen() {
		assert.True(t, strings.HasPrefix(a, "Basic "), "the registry gets its login")
	}
	assert.Len(t, storage.seen(), 2)
	for _, a := range storage.seen() {
		assert.True(t, a == "", "the storage host gets no login")
	}
	retries := seen.of(wire.StateDownloadRetrying)
	require.Len(t, retries, 1)
	assert.Contains(t, retries[0].Reason, storage.URL+"/blob", "the reason names the storage")
	noSecret(t, "the reason and the logs (the storage's presigned query)", retries[0].Reason+logs.String(), "presigned-s3cret")
	noSecret(t, "the logs", logs.String(), "pull-s3cret", base64.StdEncoding.EncodeToString([]byte("device:pull-s3cret")))
}

// TestBearerToken: a registry that answers 401 with a Bearer challenge (the
// distribution token spec). The updater asks the realm for a token with the
// realm host's login, and downloads with the token; the registry never sees
// the login.
func TestBearerToken(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs updater and agent processes")
	}
	b := builds["v2"]
	tokens := startRecorder(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		user, pass, _ := r.BasicAuth()
		q := r.URL.Query()
		if user != "device" || pass != "token-s3cret" || q.Get("service") != "test-registry" || q.Get("scope") != "repository:fleet/agent:pull" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"token": "tok-123", "expires_in": 60}`))
	})
	registry := startRecorder(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.Header.Get("Authorization") != "Bearer tok-123" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+tokens.URL+`/token",service="test-registry",scope="repository:fleet/agent:pull"`)
			http.Error(w, "token", http.StatusUnauthorized)
			return
		}
		serveBlob(w, b)
	})
	// A host the agent names, without a login, challenging with the
	// registry's realm and asking to push.
	evil := startRecorder(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+tokens.URL+`/token",service="test-registry",scope="repository:fleet/agent:push,pull"`)
		http.Error(w, "token", http.StatusUnauthorized)
	})
	d := newDevice(t, &artifactServer{caFile: startArtifactServer(t).caFile}, nil, fastRetries...)
	d.extra = append(d.extra, "--credentials", credentialsFile(t, map[string][2]string{registry.Listener.Addr().String(): {"device", "token-s3cret"}}))
	var logs bytes.Buffer
	o, ok := d.runSeeing(t, "", attemptFrom(t, evil.URL+"/v2/fleet/agent/blobs/"+digestOf(b), time.Now().Add(3*time.Second).UTC().Format(time.RFC3339)), nil, &logs)
	require.True(t, ok)
	require.Equal(t, wire.StateRefused, o.State, o.Reason)
	for _, a := range tokens.seen() {
		assert.Empty(t, a, "the realm got a login for a host that has none")
	}
	tokens.reset()
	o, ok = d.runSeeing(t, "", attemptFrom(t, registry.URL+"/v2/fleet/agent/blobs/"+digestOf(b), ""), nil, &logs)
	require.True(t, ok)
	require.Equal(t, wire.PhaseCommitted, o.State, "%s\n%s", o.Reason, logs.String())
	var got []string // what the registry saw, named without showing a login
	for _, a := range registry.seen() {
		switch a {
		case "":
			got = append(got, "none")
		case "Bearer tok-123":
			got = append(got, "the token")
		default:
			got = append(got, "something else")
		}
	}
	assert.Equal(t, []string{"something else", "the token"}, got, "the registry's login, then the token")
	require.Len(t, tokens.seen(), 1)
	assert.True(t, strings.HasPrefix(tokens.seen()[0], "Basic "), "the realm gets the registry's login")
	noSecret(t, "the logs", logs.String(), "token-s3cret", "tok-123")
}

// TestCredentialsFileRefused: the updater does not start with a credentials
// file that is a symbolic link, not a regular file, not root's, open to
// group or others, too large or unreadable; its error quotes no secret.
func TestCredentialsFileRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the updater")
	}
	const secret = "hunter2-s3cret"
	good := fmt.Sprintf(`{"auths": {"registry.example.com": {"auth": %q}}}`, base64.StdEncoding.EncodeToString([]byte("device:"+secret)))
	for _, tc := range []struct {
		name, want string
		make       func(file string) error
	}{
		{"symlink", "is a symbolic link", func(f string) error {
			real := f + ".real"
			if err := os.WriteFile(real, []byte(good), 0o600); err != nil {
				return err
			}
			return os.Symlink(real, f)
		}},
		{"readable by others", "mode 0644", func(f string) error { return os.WriteFile(f, []byte(good), 0o644) }},
		{"readable by the group", "mode 0640", func(f string) error { return os.WriteFile(f, []byte(good), 0o640) }},
		{"not root's", "not owned by root", func(f string) error {
			if err := os.WriteFile(f, []byte(good), 0o600); err != nil {
				return err
			}
			return os.Chown(f, 4242, 4242)
		}},
		{"a folder", "not a regular file", func(f string) error { return os.Mkdir(f, 0o700) }},
		{"a FIFO", "not a regular file", func(f string) error { return syscall.Mkfifo(f, 0o600) }},
		{"too large", "larger than 1048576 bytes", func(f string) error {
			return os.WriteFile(f, append([]byte(good), make([]byte, 2<<20)...), 0o600)
		}},
		{"not JSON", "a syntax error at byte", func(f string) error { return os.WriteFile(f, []byte(`{"auths": `+secret+`}`), 0o600) }},
		{"auth not base64", "is not base64 of USER:PASSWORD", func(f string) error {
			return os.WriteFile(f, []byte(`{"auths": {"r.example.com": {"auth": "`+secret+`!"}}}`), 0o600)
		}},
		{"helpers only", "no login under auths", func(f string) error {
			return os.WriteFile(f, []byte(`{"credsStore": "desktop", "auths": {"r.example.com": {}}}`), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "not root's" && os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			file := filepath.Join(t.TempDir(), "config.json")
			require.NoError(t, tc.make(file))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, updaterBin, "--root", t.TempDir(), "--group", "0", "--agent-as-root", "--credentials", file).CombinedOutput()
			require.Error(t, err, "the updater refuses to start: %s", out)
			assert.Contains(t, string(out), tc.want)
			noSecret(t, "the error", string(out), secret)
		})
	}
}

// noSecret fails the test when text holds one of secrets, showing neither.
func noSecret(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for i, secret := range secrets {
		if strings.Contains(text, secret) {
			t.Errorf("%s hold secret #%d", what, i+1)
		}
	}
}
