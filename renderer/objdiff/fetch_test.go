package objdiff

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFetcherAsksADownHostOnce: a registry that refuses connections is
// asked once per diff, not once per chart (each try may cost FetchTimeout).
func TestFetcherAsksADownHostOnce(t *testing.T) {
	srv := httptest.NewServer(nil)
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close() // refused from now on
	f := &Fetcher{}
	_, err1 := f.Fetch(context.Background(), Ref{URL: "oci://" + host + "/charts/a", Tag: "1.0.0", Insecure: true})
	require.Error(t, err1)
	_, err2 := f.Fetch(context.Background(), Ref{URL: "oci://" + host + "/charts/b", Tag: "2.0.0", Insecure: true})
	assert.True(t, err1 == err2, "the first error, not a second try: %v", err2)
}
