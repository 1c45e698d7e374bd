package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// referrersStandIn is a registry with the OCI 1.1 referrers API, built
// here from the Distribution registry (which has none) as the distribution
// spec's referrers section says one answers; no registry that offers it
// builds here (zot's module is not served, Harbor is not a Go module). It
// forwards every request to the registry, and keeps the referrers itself:
// a manifest PUT the registry takes with a subject is listed under that
// subject and answered with OCI-Subject; GET /v2/<name>/referrers/<digest>
// is an image index of them, filtered by artifactType (OCI-Filters-Applied).
type referrersStandIn struct {
	mu   sync.Mutex
	refs map[string][]ocispec.Descriptor // repository@subject digest
	// mute: the manifest PUTs are not answered with OCI-Subject (nor
	// listed), as by a registry that serves the API but did not process a
	// subject.
	mute bool
}

var (
	referrersPath = regexp.MustCompile(`^/v2/(.+)/referrers/(sha256:[0-9a-f]{64})$`)
	manifestPath  = regexp.MustCompile(`^/v2/(.+)/manifests/([^/]+)$`)
)

// startReferrersStandIn serves the stand-in for the registry at target
// (HOST:PORT, plain HTTP) and returns its HOST:PORT.
func startReferrersStandIn(t *testing.T, target string, mute bool) string {
	t.Helper()
	s := &referrersStandIn{refs: map[string][]ocispec.Descriptor{}, mute: mute}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: "http", Host: target})
		r.Out.Host = r.In.Host
	}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if m := referrersPath.FindStringSubmatch(req.URL.Path); m != nil && req.Method == http.MethodGet {
			s.list(w, m[1]+"@"+m[2], req.URL.Query().Get("artifactType"))
			return
		}
		m := manifestPath.FindStringSubmatch(req.URL.Path)
		if m == nil || req.Method != http.MethodPut {
			rp.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, req)
		if rec.Code == http.StatusCreated && !s.mute {
			s.learn(w, m[1], req.Header.Get("Content-Type"), body)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return l.Addr().String()
}

// learn lists a manifest the registry took under its subject, if it has
// one, and says so (OCI-Subject).
func (s *referrersStandIn) learn(w http.ResponseWriter, repo, mediaType string, body []byte) {
	var m ocispec.Manifest
	if json.Unmarshal(body, &m) != nil || m.Subject == nil {
		return
	}
	artifactType := m.ArtifactType
	if artifactType == "" {
		artifactType = m.Config.MediaType
	}
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(body), Size: int64(len(body)),
		ArtifactType: artifactType, Annotations: m.Annotations}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := repo + "@" + m.Subject.Digest.String()
	for _, r := range s.refs[key] {
		if r.Digest == d.Digest {
			w.Header().Set("OCI-Subject", m.Subject.Digest.String())
			return
		}
	}
	s.refs[key] = append(s.refs[key], d)
	w.Header().Set("OCI-Subject", m.Subject.Digest.String())
}

// list answers the referrers of key, of artifactType if not "".
func (s *referrersStandIn) list(w http.ResponseWriter, key, artifactType string) {
	s.mu.Lock()
	refs := []ocispec.Descriptor{}
	for _, r := range s.refs[key] {
		if artifactType == "" || r.ArtifactType == artifactType {
			refs = append(refs, r)
		}
	}
	s.mu.Unlock()
	b, _ := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: refs})
	w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
	if artifactType != "" {
		w.Header().Set("OCI-Filters-Applied", "artifactType")
	}
	_, _ = w.Write(b)
}

// TestSignaturesConfirmedUnlessTheRegistryKeepsThem: a signature pushed
// to a registry that serves the referrers API but did not answer the push
// with OCI-Subject went into the referrers index (oras-go wrote it), which
// another writer can lose it from: publish reads it back a settle later,
// twice, as on a registry without the API.
func TestSignaturesConfirmedUnlessTheRegistryKeepsThem(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	ctx := context.Background()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	log := &requestLog{}
	remote, err := store.NewRemote(store.RemoteOptions{Host: startReferrersStandIn(t, reg.Host, true), Prefix: "p",
		Username: reg.Username, Password: reg.Password, PlainHTTP: true, Wrap: log.wrap})
	require.NoError(t, err)
	k, _ := signingKey(t)
	_, err = Publish(ctx, remote, []Job{chartJob("a/chart", "a/chart")}, Options{SigningKey: k, Absent: map[string]bool{"a/chart": true}})
	require.NoError(t, err)
	got := log.take()
	assert.Contains(t, got, "GET /v2/p/a/chart/referrers/<digest> 200", "the registry serves the API")
	assert.Contains(t, got, "PUT /v2/p/a/chart/manifests/sha256-<digest> 201", "the signature went into the referrers index")
	n := 0
	for _, r := range got[slices.Index(got, "PUT /v2/p/a/chart/manifests/sha256-<digest> 201"):] {
		if r == "GET /v2/p/a/chart/manifests/sha256-<digest> 200" {
			n++
		}
	}
	assert.Equal(t, 2, n, "the index read back twice a settle apart: %v", got)
}
