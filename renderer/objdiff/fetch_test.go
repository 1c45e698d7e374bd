package objdiff

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// TestFetcherReadsOtherRegistriesMeanwhile: while one registry is slow to
// answer, a chart of another registry, or one read before, waits for it no
// more: Targets are compared two at a time, and one slow chart held both.
func TestFetcherReadsOtherRegistriesMeanwhile(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		http.NotFound(w, r)
	}))
	defer slow.Close()
	fast := httptest.NewServer(http.NotFoundHandler())
	defer fast.Close()
	ref := func(srv *httptest.Server, chart string) Ref {
		return Ref{URL: "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts/" + chart, Tag: "1.0.0", Insecure: true}
	}
	f := &Fetcher{}
	_, errBefore := f.Fetch(context.Background(), ref(fast, "a"))
	require.Error(t, errBefore)
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		_, _ = f.Fetch(context.Background(), ref(slow, "s"))
	}()
	time.Sleep(100 * time.Millisecond) // the slow read is under way
	start := time.Now()
	_, err := f.Fetch(context.Background(), ref(fast, "b"))
	require.Error(t, err)
	_, err = f.Fetch(context.Background(), ref(fast, "a"))
	assert.True(t, err == errBefore, "the first read's error: %v", err)
	assert.Less(t, time.Since(start), 2*time.Second, "waited for the slow registry")
	select {
	case <-slowDone:
		t.Fatal("the slow read ended first")
	default:
	}
	close(release)
	<-slowDone
}
