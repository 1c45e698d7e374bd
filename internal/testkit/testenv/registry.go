package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
)

// Registry is a running OCI registry (the CNCF Distribution registry v3,
// scripts/start-registry.sh) with basic auth.
type Registry struct {
	// Host is 127.0.0.1:PORT.
	Host     string
	Username string
	Password string
	// CAFile is the certificate to trust, empty for plain HTTP.
	CAFile string
	// Storage is the registry's filesystem storage (its rootdirectory): what
	// a test damages to see that a check reads it.
	Storage string

	stop func()
}

// Stop kills the registry before the test ends: from then on its host
// refuses every connection (a site that can no longer reach it).
func (r *Registry) Stop() { r.stop() }

// RegistryOptions choose how the registry serves.
type RegistryOptions struct {
	TLS bool
	// NoCache serves without the in-memory cache of blob descriptors: a
	// blob's HEAD then answers from the storage, as a restarted registry's
	// would.
	NoCache bool
	// NoAuth serves anonymously, as a public registry serves pulls.
	NoAuth bool
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

// StartRegistry runs scripts/start-registry.sh and waits until the registry
// answers. It fails the test, saying how to install them, when the registry
// (Distribution's `registry`) or solar-testpki (its htpasswd file and
// certificate) is missing: scripts/install-tools.sh builds both, no root
// needed.
func StartRegistry(t testing.TB, opts RegistryOptions) *Registry {
	t.Helper()
	Tool(t, "registry")
	Tool(t, "solar-testpki")
	dir := t.TempDir()
	port := FreePort(t)
	r := &Registry{Host: fmt.Sprintf("127.0.0.1:%d", port), Username: "solar", Password: "s3cret-" + fmt.Sprint(port),
		Storage: filepath.Join(dir, "data")}
	args := []string{filepath.Join(Root(t), "scripts", "start-registry.sh"), dir, fmt.Sprint(port)}
	if opts.TLS {
		args = append(args, "--tls")
		r.CAFile = filepath.Join(dir, "cert.pem")
	}
	if opts.NoCache {
		args = append(args, "--no-cache")
	}
	cmd := exec.Command("bash", args...)
	cmd.Env = append(os.Environ(), "REGISTRY_USER="+r.Username, "REGISTRY_PASSWORD="+r.Password)
	want := http.StatusUnauthorized
	if opts.NoAuth {
		cmd.Env = append(cmd.Env, "REGISTRY_AUTH=none")
		want = http.StatusOK
	}
	logs, stop := start(t, cmd)
	r.stop = stop

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
		return resp.StatusCode == want
	})
	return r
}

// StartProxy forwards 127.0.0.1:PORT to the plain-HTTP host target until the
// test ends.
func StartProxy(t testing.TB, target string) *countproxy.Proxy {
	t.Helper()
	p, err := countproxy.Start(target)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}
