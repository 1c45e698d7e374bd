package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// PullOnly is a front to a TLS Registry that adds what the Distribution
// registry's htpasswd cannot: a pull-only account, as a hosted registry's
// robot accounts and read-only tokens are. The registry's own user passes
// through unchanged; Reader may send GET and HEAD only, which the front
// forwards with the registry's credentials. Any other request of Reader's is
// answered 403 DENIED, as a registry answers a push without rights, and
// counted.
type PullOnly struct {
	// Host is 127.0.0.1:PORT, served with the registry's certificate.
	Host           string
	Reader         string
	ReaderPassword string
	// Denied counts Reader's requests that would have written.
	Denied atomic.Int64
}

// StartPullOnly serves a PullOnly front to r until the test ends.
func StartPullOnly(t testing.TB, r *Registry) *PullOnly {
	t.Helper()
	require.NotEmpty(t, r.CAFile, "the pull-only front serves TLS with the registry's certificate")
	cert, err := tls.LoadX509KeyPair(r.CAFile, filepath.Join(filepath.Dir(r.CAFile), "key.pem"))
	require.NoError(t, err)
	pem, err := os.ReadFile(r.CAFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &PullOnly{Host: ln.Addr().String(), Reader: "reader", ReaderPassword: "pull-only-" + r.Password}
	upstream := &url.URL{Scheme: "https", Host: r.Host}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Host = pr.In.Host // the registry's Location headers name the front
		},
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if user, pass, ok := req.BasicAuth(); ok && user == p.Reader {
			if pass != p.ReaderPassword {
				w.Header().Set("WWW-Authenticate", `Basic realm="solar"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			if req.Method != http.MethodGet && req.Method != http.MethodHead {
				p.Denied.Add(1)
				w.Header().Set("Content-Type", "application/json")
				http.Error(w, `{"errors":[{"code":"DENIED","message":"pull-only account"}]}`, http.StatusForbidden)
				return
			}
			req.SetBasicAuth(r.Username, r.Password)
		}
		proxy.ServeHTTP(w, req)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("pull-only front: %v", err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}
