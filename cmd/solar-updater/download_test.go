package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

// flakyServer serves the v2 build over HTTPS at /blob, failing in one way
// (how) for its first fails requests (TLS handshakes, for "untrusted"), then
// serving correctly: the cause of a transport failure going away.
type flakyServer struct {
	*httptest.Server
	blob  []byte
	how   string
	fails atomic.Int32
	// user and password, when set, are required once the failures are
	// over (Basic).
	user, password string
	// plain is the plain-HTTP server "redirect-http" sends to;
	// plainHits counts its requests.
	plain     *httptest.Server
	plainHits atomic.Int32
	done      chan struct{} // closed when the test ends: a stalled answer ends
	mu        sync.Mutex
	hits      []hit // the requests the handler saw
}

type hit struct {
	at   time.Time
	auth string
}

func startFlakyServer(t *testing.T, how string, fails int) *flakyServer {
	t.Helper()
	s := &flakyServer{blob: builds["v2"], how: how, done: make(chan struct{})}
	s.fails.Store(int32(fails))
	s.plain = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.plainHits.Add(1)
		_, _ = w.Write(s.blob)
	}))
	t.Cleanup(s.plain.Close)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	bad := untrustedCertificate(t)
	s.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		if s.how == "untrusted" && s.fails.Add(-1) >= 0 {
			return &tls.Config{Certificates: []tls.Certificate{bad}}, nil
		}
		return nil, nil // the server's own, which the updater trusts
	}}
	s.StartTLS()
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.done) }) // before Close, which waits for the handlers
	return s
}

func (s *flakyServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits = append(s.hits, hit{time.Now(), r.Header.Get("Authorization")})
	s.mu.Unlock()
	if s.how != "untrusted" && s.fails.Add(-1) >= 0 {
		s.misbehave(w, r)
		return
	}
	if user, pass, _ := r.BasicAuth(); s.user != "" && (user != s.user || pass != s.password) {
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(s.blob)))
	_, _ = w.Write(s.blob)
}

// misbehave fails one request the way s.how says.
func (s *flakyServer) misbehave(w http.ResponseWriter, r *http.Request) {
	switch s.how {
	case "401":
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		http.Error(w, "not yet", http.StatusUnauthorized)
	case "429":
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	case "503-date":
		w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	case "503":
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	case "404":
		http.NotFound(w, r)
	case "redirect-http":
		http.Redirect(w, r, s.plain.URL+"/blob", http.StatusTemporaryRedirect)
	case "reset": // half the body, then a TCP reset
		w.Header().Set("Content-Length", fmt.Sprint(len(s.blob)))
		_, _ = w.Write(s.blob[:len(s.blob)/2])
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.(*tls.Conn).NetConn().(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	case "stall", "trickle": // a quarter of the body, then nothing or a byte at a time
		w.Header().Set("Content-Length", fmt.Sprint(len(s.blob)))
		_, _ = w.Write(s.blob[:len(s.blob)/4])
		for i := len(s.blob) / 4; ; i++ {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-s.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if s.how == "trickle" {
				_, _ = w.Write(s.blob[i : i+1])
			}
		}
	}
}

func (s *flakyServer) hitsSeen() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.hits...)
}

// attempt is a sealed attempt of v2 from the server's /blob.
func (s *flakyServer) attempt(t *testing.T, notAfter string) wire.Attempt {
	t.Helper()
	a, err := wire.Attempt{DeviceID: "dev-1", TargetVersion: "2.0.0", NotAfter: notAfter, Artifact: wire.Artifact{
		URL: s.URL + "/blob", Digest: digestOf(s.blob), Size: int64(len(s.blob)), Platform: "linux/amd64"}}.Seal()
	require.NoError(t, err)
	return a
}

// untrustedCertificate is a self-signed certificate for 127.0.0.1 that no
// CA the updater is given signed.
func untrustedCertificate(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "untrusted"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// fastRetries are the updater flags of the tests: short waits, and an idle
// timeout a slow machine keeps (the stall case sets a short one).
var fastRetries = []string{"--download-backoff", "50ms", "--download-backoff-max", "200ms", "--download-idle-timeout", "5s"}

// outcomes collects what the updater reports.
type outcomes struct {
	mu   sync.Mutex
	list []wire.Outcome
}

func (o *outcomes) add(x wire.Outcome) { o.mu.Lock(); o.list = append(o.list, x); o.mu.Unlock() }

// of are the outcomes of one state.
func (o *outcomes) of(state string) []wire.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []wire.Outcome
	for _, x := range o.list {
		if x.State == state {
			out = append(out, x)
		}
	}
	return out
}

// TestTransportFailureMatrix: each way the link, TLS, the server or the login
// fails a download. The first tries fail and are reported as
// download-retrying with the reason; then the cause goes away (the server
// serves correctly) and the same attempt, in the same Handle call, commits
// with v2 running. No digest is marked failed.
func TestTransportFailureMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs updater and agent processes")
	}
	caFile := startArtifactServer(t).caFile // httptest's certificate, the flaky servers' too
	for _, tc := range []struct {
		how    string
		fails  int
		reason string   // in every download-retrying reason
		flags  []string // more updater flags
		gap    time.Duration
	}{
		{how: "401", fails: 2, reason: "401 Unauthorized"},
		{how: "untrusted", fails: 2, reason: "certificate signed by unknown authority"},
		{how: "reset", fails: 2, reason: ""}, // "reset by peer" or "unexpected EOF": checked below
		{how: "stall", fails: 1, reason: "no byte received for 1s (--download-idle-timeout)", flags: []string{"--download-idle-timeout", "1s"}},
		{how: "trickle", fails: 1, reason: "took longer than 3s (--download-timeout)", flags: []string{"--download-timeout", "3s"}},
		{how: "429", fails: 1, reason: "429 Too Many Requests", gap: time.Second},
		{how: "503-date", fails: 1, reason: "503 Service Unavailable", gap: 900 * time.Millisecond},
		{how: "503", fails: 2, reason: "503 Service Unavailable"},
		{how: "404", fails: 2, reason: "404 Not Found"},
		{how: "redirect-http", fails: 2, reason: "a redirect to http://127.0.0.1"},
	} {
		t.Run(tc.how, func(t *testing.T) {
			s := startFlakyServer(t, tc.how, tc.fails)
			d := newDevice(t, &artifactServer{caFile: caFile}, nil, append(append([]string{}, fastRetries...), tc.flags...)...)
			if tc.how == "401" {
				s.user, s.password = "device", "pull-s3cret"
				d.extra = append(d.extra, "--credentials", credentialsFile(t, map[string][2]string{s.Listener.Addr().String(): {s.user, s.password}}))
			}
			var seen outcomes
			var logs bytes.Buffer
			o, ok := d.runSeeing(t, "", s.attempt(t, ""), seen.add, &logs)
			require.True(t, ok, "%s", logs.String())
			require.Equal(t, wire.PhaseCommitted, o.State, "%s: %s\n%s", o.Step, o.Reason, logs.String())
			assert.Equal(t, "v2", running(t, d.paths, builds))
			retries := seen.of(wire.StateDownloadRetrying)
			require.Len(t, retries, tc.fails, "a download-retrying outcome per failed try: %+v", seen.list)
			t.Logf("reported: %s", retries[0].Reason)
			for _, r := range retries {
				assert.Equal(t, "download", r.Step)
				assert.Contains(t, r.Reason, tc.reason)
				if tc.how == "reset" {
					assert.Regexp(t, "reset by peer|unexpected EOF", r.Reason)
				}
			}
			assert.Len(t, seen.of(wire.PhasePreparing), 1, "one Handle call, one try counted")
			assert.Empty(t, journalOf(t, d.paths).Failed, "no digest is marked failed")
			hits := s.hitsSeen()
			if tc.gap > 0 {
				require.GreaterOrEqual(t, len(hits), 2)
				assert.GreaterOrEqual(t, hits[1].at.Sub(hits[0].at), tc.gap, "Retry-After is honoured")
			}
			if tc.how == "redirect-http" {
				assert.Zero(t, s.plainHits.Load(), "the redirect to plain HTTP was not followed")
			}
			if tc.how == "401" {
				for _, h := range hits {
					assert.True(t, strings.HasPrefix(h.auth, "Basic "), "the login is sent to its host")
				}
				noSecret(t, "the logs", logs.String(), s.password)
			}
		})
	}
}

// journalOf reads the device's journal.
func journalOf(t *testing.T, p updater.Paths) updater.Journal {
	t.Helper()
	var j updater.Journal
	b, err := os.ReadFile(p.Journal())
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &j))
	return j
}

// credentialsFile writes a Docker config.json, mode 0600, with a login
// (user, password) per host.
func credentialsFile(t *testing.T, logins map[string][2]string) string {
	t.Helper()
	auths := map[string]map[string]string{}
	for host, l := range logins {
		auths[host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(l[0] + ":" + l[1]))}
	}
	b, err := json.Marshal(map[string]any{"auths": auths})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(file, b, 0o600))
	return file
}

// TestDownloadCancelled: the updater stopped (its context ended) while it
// retries a download stops at once; the journal is idle again, the try is
// not counted against --max-tries, the digest is not marked failed, and the
// attempt, sent again once the server is fixed, commits.
func TestDownloadCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs updater and agent processes")
	}
	s := startFlakyServer(t, "503", 1<<20)
	d := newDevice(t, &artifactServer{caFile: startArtifactServer(t).caFile}, nil, fastRetries...)
	pid := d.start(t)
	a := s.attempt(t, "")
	var seen outcomes
	sent := make(chan error, 1)
	go func() {
		_, err := wire.Send(context.Background(), d.paths.Socket(), a, seen.add)
		sent <- err
	}()
	require.Eventually(t, func() bool { return len(seen.of(wire.StateDownloadRetrying)) >= 2 }, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	select {
	case err := <-sent:
		require.ErrorContains(t, err, "before a final outcome", "no final outcome: nothing was decided")
	case <-time.After(10 * time.Second):
		t.Fatal("the updater, told to stop, did not end the connection: wedged in the retries")
	}
	require.Eventually(t, func() bool { return !processAlive(pid) }, 5*time.Second, 20*time.Millisecond, "the updater exits")
	j := journalOf(t, d.paths)
	assert.Equal(t, wire.PhaseIdle, j.Phase)
	assert.Zero(t, j.Tries[a.Artifact.Digest], "a cancelled try is not counted")
	assert.Empty(t, j.Failed)
	assert.Equal(t, "v1", running(t, d.paths, builds))

	s.fails.Store(0)
	o, ok := d.run(t, "", a)
	require.True(t, ok)
	assert.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
	assert.Equal(t, "v2", running(t, d.paths, builds))
}
