package sign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/solar-pipeline/solar/api"
	"oras.land/oras-go/v2/registry/remote"
)

// TestOneKeyPerFile: a file of two public keys, or of a key and other text,
// is refused: Flux reads the first block of a Secret entry only, so a
// second key would verify here and not there.
func TestOneKeyPerFile(t *testing.T) {
	a, b := newKey(t), newKey(t)
	for name, file := range map[string][]byte{
		"two keys":       append(a.PublicPEM(), b.PublicPEM()...),
		"key and a JWK":  append(a.PublicPEM(), []byte(`{"kty":"OKP","d":"SECRET"}`)...),
		"no key":         []byte("hello"),
		"a private key":  []byte("-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n"),
		"nothing at all": nil,
	} {
		if _, err := NewVerifier(file); err == nil {
			t.Errorf("%s: taken as a verification key", name)
		}
	}
	if _, err := NewVerifier(a.PublicPEM(), b.PublicPEM()); err != nil {
		t.Fatalf("two keys, one each: %v", err)
	}
}

// TestEndlessReferrers: a registry that lists referrers page after page
// without end is refused after maxReferrers, not followed.
func TestEndlessReferrers(t *testing.T) {
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/referrers/") {
			if r.URL.Path != "/v2/" {
				w.WriteHeader(http.StatusNotFound)
			}
			return
		}
		n := pages.Add(1)
		idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex}
		idx.SchemaVersion = 2
		for i := range 1000 {
			idx.Manifests = append(idx.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: api.MediaTypeSigstoreBundle,
				Digest: digest.FromString(fmt.Sprint(n, i)), Size: 100})
		}
		w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
		w.Header().Set("Link", fmt.Sprintf(`<%s?n=%d>; rel="next"`, r.URL.Path, n+1))
		_ = json.NewEncoder(w).Encode(idx)
	}))
	defer srv.Close()
	repo, err := remote.NewRepository(strings.TrimPrefix(srv.URL, "http://") + "/ns/app")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	v, err := NewVerifier(newKey(t).PublicPEM())
	if err != nil {
		t.Fatal(err)
	}
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("x"), Size: 1}
	err = v.Check(context.Background(), repo, Subject{Repository: "ns/app", Version: "0.0.1", Manifest: subject})
	if !errors.Is(err, errTooMany) || pages.Load() > 1 {
		t.Fatalf("after %d pages: %v", pages.Load(), err)
	}
}
