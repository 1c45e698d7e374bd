package credential

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/api"
)

// requests counts what a config sends beyond the watches (a watch, or an
// informer's list from a resourceVersion).
type requests struct {
	mu    sync.Mutex
	paths []string
}

func (r *requests) config(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{rt, r}
	})
	return out
}

type countingTransport struct {
	rt http.RoundTripper
	r  *requests
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if q.Get("watch") != "true" && !q.Has("resourceVersion") {
		c.r.mu.Lock()
		c.r.paths = append(c.r.paths, req.Method+" "+req.URL.Path)
		c.r.mu.Unlock()
	}
	return c.rt.RoundTrip(req)
}

func (r *requests) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.paths
	r.paths = nil
	return out
}

// TestCachedSyncWritesOnlyChanges: a minter reading a Cache mints as the
// API server's does; a second sync of the unchanged Target sends no
// request; a deleted token Secret and a deleted Role are made again (the
// informers see the deletes), and a token due for rotation is rotated.
func TestCachedSyncWritesOnlyChanges(t *testing.T) {
	e := start(t, "alpha")
	ctx := context.Background()
	tgt := e.target(t, "alpha", "edge-1")
	var counted requests
	cfg := counted.config(e.s.Config)
	cache, err := NewCache(cfg, nil)
	require.NoError(t, err)
	t.Cleanup(cache.Close)
	m := e.minter(t, cfg, Options{TTL: time.Hour, Cache: cache})

	first := m.Sync(ctx, tgt)
	require.Equal(t, api.ReasonIssued, first.Reason, first.Message)
	again := m.Sync(ctx, tgt)
	assert.Equal(t, Fingerprint(first.Kubeconfig), Fingerprint(again.Kubeconfig), "at once after: the token it wrote, not a second")
	require.Len(t, e.tokenSecrets(t, "alpha", "edge-1"), 1)
	counted.take()
	require.Eventually(t, func() bool {
		m.Sync(ctx, tgt)
		// Only the Target is read (nil: no cache of Targets given).
		return len(counted.take()) == 1
	}, 10*time.Second, 100*time.Millisecond, "an unchanged sync sends no request but the Target's get")

	// The token Secret deleted: a new token.
	require.NoError(t, e.s.Client.CoreV1().Secrets("alpha").Delete(ctx, e.tokenSecrets(t, "alpha", "edge-1")[0].Name, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		c := m.Sync(ctx, tgt)
		return c.Reason == api.ReasonIssued && Fingerprint(c.Kubeconfig) != Fingerprint(first.Kubeconfig)
	}, 10*time.Second, 100*time.Millisecond, "a deleted token Secret is minted again")
	require.Len(t, e.tokenSecrets(t, "alpha", "edge-1"), 1)

	// The Role deleted: made again.
	require.NoError(t, e.s.Client.RbacV1().Roles("alpha").Delete(ctx, Name("edge-1"), metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		m.Sync(ctx, tgt)
		_, err := e.s.Client.RbacV1().Roles("alpha").Get(ctx, Name("edge-1"), metav1.GetOptions{})
		return err == nil
	}, 10*time.Second, 100*time.Millisecond, "a deleted Role is made again")

	// Rotation: less than RotateBefore left.
	current := e.tokenSecrets(t, "alpha", "edge-1")[0]
	later := Options{TTL: 2 * time.Hour, RotateBefore: 20 * time.Minute, Cache: cache,
		Now: func() time.Time { return expires(&current).Add(-19 * time.Minute) }}
	rotated := e.minter(t, cfg, later).Sync(ctx, tgt)
	require.Equal(t, api.ReasonIssued, rotated.Reason, rotated.Message)
	assert.Len(t, e.tokenSecrets(t, "alpha", "edge-1"), 2, "a new token; the old stays until it expires")
}

// TestCacheWithoutRightsFails: where the minter may not read, its sync
// fails at once and says why, and no informer is left running.
func TestCacheWithoutRightsFails(t *testing.T) {
	e := start(t, "alpha")
	ctx := context.Background()
	tgt := e.target(t, "alpha", "edge-1")
	cfg := rest.CopyConfig(e.s.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	cache, err := NewCache(cfg, nil)
	require.NoError(t, err)
	t.Cleanup(cache.Close)
	began := time.Now()
	cred := e.minter(t, cfg, Options{TTL: time.Hour, Cache: cache}).Sync(ctx, tgt)
	assert.Equal(t, api.ReasonMintFailed, cred.Reason)
	assert.Contains(t, cred.Message, "reading the agents' objects in namespace alpha")
	assert.Less(t, time.Since(began), 10*time.Second)
	assert.Empty(t, cache.Namespaces())
	_, err = e.s.Client.CoreV1().ServiceAccounts("alpha").Get(ctx, Name("edge-1"), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing made")
}
