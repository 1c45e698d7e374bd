package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Registry is a running docker-registry with basic auth.
type Registry struct {
	// Host is 127.0.0.1:PORT.
	Host     string
	Username string
	Password string
	// CAFile is the certificate to trust, empty for plain HTTP.
	CAFile string
}

// RegistryOptions choose how the registry serves.
type RegistryOptions struct {
	TLS bool
}

// Root is the repository's root directory, found from the working directory.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the working directory")
		dir = parent
	}
}

// FreePort returns a port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartRegistry runs scripts/start-registry.sh and waits until the registry
// answers. It fails the test, saying how to install it, when docker-registry
// is missing.
func StartRegistry(t testing.TB, opts RegistryOptions) *Registry {
	t.Helper()
	Tool(t, "docker-registry")
	dir := t.TempDir()
	port := FreePort(t)
	r := &Registry{Host: fmt.Sprintf("127.0.0.1:%d", port), Username: "solar", Password: "s3cret-" + fmt.Sprint(port)}
	args := []string{filepath.Join(Root(t), "scripts", "start-registry.sh"), dir, fmt.Sprint(port)}
	if opts.TLS {
		args = append(args, "--tls")
		r.CAFile = filepath.Join(dir, "cert.pem")
	}
	cmd := exec.Command("bash", args...)
	cmd.Env = append(os.Environ(), "REGISTRY_USER="+r.Username, "REGISTRY_PASSWORD="+r.Password)
	logs := start(t, cmd)

	client := &http.Client{Timeout: time.Second}
	waitUntil(t, "the registry on "+r.Host, 20*time.Second, logs, func() bool {
		scheme := "http"
		if opts.TLS {
			pem, err := os.ReadFile(r.CAFile)
			if err != nil {
				return false
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pem)
			client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
			scheme = "https"
		}
		resp, err := client.Get(scheme + "://" + r.Host + "/v2/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized
	})
	return r
}

// Proxy is a plain-HTTP reverse proxy that counts the requests it forwards.
type Proxy struct {
	Host string

	mu       sync.Mutex
	requests []string
	failNext int
	failWith int
}

// FailNext makes the proxy answer the next n requests with status itself,
// without forwarding them: a registry under load or restarting.
func (p *Proxy) FailNext(n, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext, p.failWith = n, status
}

// StartProxy forwards 127.0.0.1:PORT to the plain-HTTP host target.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.Host = l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, req.Method+" "+req.URL.Path)
		fail := p.failNext > 0
		if fail {
			p.failNext--
		}
		p.mu.Unlock()
		if fail {
			http.Error(w, "injected by the test proxy", p.failWith)
			return
		}
		rp.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// Take returns the requests since the last call, as "METHOD PATH".
func (p *Proxy) Take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.requests
	p.requests = nil
	return out
}

// Writes counts the requests of a list that change the registry.
func Writes(requests []string) int {
	n := 0
	for _, r := range requests {
		if strings.HasPrefix(r, "POST ") || strings.HasPrefix(r, "PUT ") || strings.HasPrefix(r, "PATCH ") || strings.HasPrefix(r, "DELETE ") {
			n++
		}
	}
	return n
}
