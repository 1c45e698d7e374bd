package testenv

import (
	"net/http"
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
