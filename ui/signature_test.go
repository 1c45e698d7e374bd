package ui

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/solar-pipeline/solar/renderer/store"
)

func newSigningKey(t *testing.T) *sign.Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	k, err := sign.NewKey(priv)
	require.NoError(t, err)
	return k
}

// publishSigned publishes the examples' alpha/edge-2 unsigned, then
// alpha/edge-1 signed with k, the way solar publish does (pipeline.Run,
// --signing-key), into a layout, and returns the layout opened again.
func publishSigned(t *testing.T, k *sign.Key) *store.Layout {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	resolved := testenv.ExamplesPlan(t)
	for _, run := range []struct {
		name string
		key  *sign.Key
	}{{"edge-2", nil}, {"edge-1", k}} {
		plan := &pipeline.Plan{}
		for _, tg := range resolved.Targets {
			if tg.Namespace == "alpha" && tg.Name == run.name {
				plan.Targets = append(plan.Targets, &pipeline.Target{Resolution: tg})
			}
		}
		require.Len(t, plan.Targets, 1)
		l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
		require.NoError(t, err)
		_, err = pipeline.Run(ctx, plan, l, pipeline.Options{PublishOptions: pipeline.PublishOptions{SigningKey: run.key}})
		require.NoError(t, err)
		require.NoError(t, l.Save(ctx))
		require.NoError(t, l.Close())
	}
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// startSigUI starts another UI on e's API server, reading st and trusting
// keys, and returns its handler and a session of alice (who may read
// alpha).
func startSigUI(t *testing.T, e *uiEnv, st store.Store, keys []VerifyKey) (*Server, *http.Cookie) {
	t.Helper()
	return startUIOn(t, e, Options{Store: st, Refresh: time.Hour, VerifyKeys: keys})
}

// startUIOn starts another UI with opts on e's API server (as the UI's
// account, logging to the test) and returns it with a session of alice
// (who may read alpha).
func startUIOn(t *testing.T, e *uiEnv, opts Options) (*Server, *http.Cookie) {
	t.Helper()
	opts.Config, opts.Log = e.server.opts.Config, slog.New(slog.NewTextHandler(testLog{t}, nil))
	s, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx) }()
	select {
	case <-s.Ready():
	case <-time.After(time.Minute):
		t.Fatal("the UI's watch did not start")
	}
	w := httptest.NewRecorder()
	s.sessions.start(w, "alice", nil)
	return s, w.Result().Cookies()[0]
}

// getPage is the body of GET path from s as the session c.
func getPage(t *testing.T, s *Server, c *http.Cookie, path string) string {
	t.Helper()
	req := httptest.NewRequest("GET", "https://ui.example"+path, nil)
	req.AddCookie(c)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	return w.Body.String()
}

func key(name string, k *sign.Key) []VerifyKey { return []VerifyKey{{Name: name, PEM: k.PublicPEM()}} }

// TestTargetSignatureCheck (issue 51, the signature check): the Target
// page says what Flux's verify would decide of the bootstrap chart and the
// release charts the Target pulls: verified (naming the key) for edge-1,
// published with --signing-key, unsigned for edge-2's bootstrap chart,
// not verified with another key, and no key given without --verify-key.
func TestTargetSignatureCheck(t *testing.T) {
	signing, other := newSigningKey(t), newSigningKey(t)
	l := publishSigned(t, signing)
	e := startUI(t, nil)
	target := map[string]any{"renderRegistryRef": map[string]any{"name": "r"}}
	e.create(t, api.KindTarget, "alpha", "edge-1", target)
	e.create(t, api.KindTarget, "alpha", "edge-2", target)

	s, alice := startSigUI(t, e, l, key("solar.pub", signing))
	body := getPage(t, s, alice, "/targets/alpha/edge-1")
	assert.Contains(t, body, `<td>alpha/bootstrap-edge-1</td><td>0.0.1</td><td class="signature verified state Passed">verified (key solar.pub)</td>`)
	assert.Greater(t, strings.Count(body, `class="signature verified state Passed"`), 1, "the release charts it names are checked too")
	assert.NotContains(t, body, "unsigned", "edge-1's release charts are signed too")
	assert.NotContains(t, body, "cannot be read")
	assert.NotContains(t, body, "not verified")
	assert.NotContains(t, body, "BEGIN PUBLIC KEY", "the key itself is never shown")
	checks := s.sigs.checks
	require.Positive(t, checks)
	getPage(t, s, alice, "/targets/alpha/edge-1")
	assert.Equal(t, checks, s.sigs.checks, "a second look checks nothing again")

	body = getPage(t, s, alice, "/targets/alpha/edge-2")
	assert.Contains(t, body, `<td>alpha/bootstrap-edge-2</td><td>0.0.1</td><td class="signature unsigned state Failed">unsigned</td>`)

	s, alice = startSigUI(t, e, l, key("other.pub", other))
	body = getPage(t, s, alice, "/targets/alpha/edge-1")
	assert.Contains(t, body, `<td>alpha/bootstrap-edge-1</td><td>0.0.1</td><td class="signature not-verified state Failed">not verified: the signature does not verify with other.pub</td>`)
	assert.NotContains(t, body, "verified (key")

	s, alice = startSigUI(t, e, l, append(key("other.pub", other), key("solar.pub", signing)...))
	body = getPage(t, s, alice, "/targets/alpha/edge-1")
	assert.Contains(t, body, `<td class="signature verified state Passed">verified (key solar.pub)</td>`, "either key: a rotation")

	s, alice = startSigUI(t, e, l, nil)
	body = getPage(t, s, alice, "/targets/alpha/edge-1")
	assert.Contains(t, body, "no key given")
	assert.NotContains(t, body, "verified")
}

// brokenStore answers every signature listing with the registry's error.
type brokenStore struct{ store.Store }

type brokenRepo struct{ store.Repository }

func (b brokenStore) Repository(ctx context.Context, name string) (store.Repository, error) {
	r, err := b.Store.Repository(ctx, name)
	return brokenRepo{r}, err
}

func (brokenRepo) Predecessors(context.Context, ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	return nil, errors.New("503 Service Unavailable")
}

// TestSignatureRegistryError: a store that cannot list a chart's
// signatures is a registry error on the page, never "unsigned", and is
// asked again next time (not kept); a result is kept per digest.
func TestSignatureRegistryError(t *testing.T) {
	k := newSigningKey(t)
	l := publishSigned(t, k)
	edge1 := status.Target{Namespace: "alpha", Name: "edge-1", Bootstrap: "0.0.1"}
	s, err := newSignatures(brokenStore{l}, key("solar.pub", k), time.Now)
	require.NoError(t, err)
	v := s.view(context.Background(), edge1)
	require.NotEmpty(t, v.Items)
	for _, it := range v.Items {
		assert.Equal(t, sigError, it.State, it.Chart)
		assert.Contains(t, it.Text, "registry error: ", it.Chart)
		assert.Contains(t, it.Text, "503", it.Chart)
	}
	checks := s.checks
	s.view(context.Background(), edge1)
	assert.Greater(t, s.checks, checks, "an error is asked again")

	s, err = newSignatures(l, key("solar.pub", k), time.Now)
	require.NoError(t, err)
	v = s.view(context.Background(), edge1)
	for _, it := range v.Items {
		assert.Equal(t, sigVerified, it.State, it.Chart)
	}
	checks = s.checks
	s.view(context.Background(), edge1)
	assert.Equal(t, checks, s.checks, "kept by digest")

	// An unsigned version is looked at again after a while: a later
	// publish may sign it.
	now := time.Now()
	s, err = newSignatures(l, key("solar.pub", k), func() time.Time { return now })
	require.NoError(t, err)
	edge2 := status.Target{Namespace: "alpha", Name: "edge-2", Bootstrap: "0.0.1"}
	v = s.view(context.Background(), edge2)
	require.NotEmpty(t, v.Items)
	assert.Equal(t, sigUnsigned, v.Items[0].State)
	checks = s.checks
	s.view(context.Background(), edge2)
	assert.Equal(t, checks, s.checks, "kept a while")
	now = now.Add(sigRecheck)
	s.view(context.Background(), edge2)
	assert.Greater(t, s.checks, checks, "then checked again")
}
