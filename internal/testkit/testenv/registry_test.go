package testenv

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistryRequiresAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real registry")
	}
	r := StartRegistry(t, RegistryOptions{})
	p := StartProxy(t, r.Host)
	resp, err := http.Get("http://" + p.Host + "/v2/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	req, err := http.NewRequest(http.MethodGet, "http://"+p.Host+"/v2/", nil)
	require.NoError(t, err)
	req.SetBasicAuth(r.Username, r.Password)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []string{"GET /v2/", "GET /v2/"}, p.Take())
}

// TestRegistryServesTLS: with TLS, the registry serves on https with the
// certificate solar-testpki made, which a client trusting CAFile accepts for
// 127.0.0.1, and deletes are allowed (solar gc needs them).
func TestRegistryServesTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real registry")
	}
	r := StartRegistry(t, RegistryOptions{TLS: true})
	pem, err := os.ReadFile(r.CAFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base, err := url.Parse("https://" + r.Host)
	require.NoError(t, err)
	do := func(method, ref string, body []byte) *http.Response {
		t.Helper()
		u, err := base.Parse(ref)
		require.NoError(t, err)
		req, err := http.NewRequest(method, u.String(), bytes.NewReader(body))
		require.NoError(t, err)
		req.SetBasicAuth(r.Username, r.Password)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	assert.Equal(t, http.StatusOK, do(http.MethodGet, "/v2/", nil).StatusCode)

	// A blob, uploaded (POST, then PUT with the content) and deleted.
	blob := []byte("solar")
	digest := fmt.Sprintf("sha256:%x", sha256.Sum256(blob))
	resp := do(http.MethodPost, "/v2/tls/blobs/uploads/", nil)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	q := loc.Query()
	q.Set("digest", digest)
	loc.RawQuery = q.Encode()
	require.Equal(t, http.StatusCreated, do(http.MethodPut, loc.String(), blob).StatusCode)
	assert.Equal(t, http.StatusOK, do(http.MethodHead, "/v2/tls/blobs/"+digest, nil).StatusCode)
	assert.Equal(t, http.StatusAccepted, do(http.MethodDelete, "/v2/tls/blobs/"+digest, nil).StatusCode)
	assert.Equal(t, http.StatusNotFound, do(http.MethodHead, "/v2/tls/blobs/"+digest, nil).StatusCode)
}
