package callout

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowJWKS is a key endpoint on 127.0.0.1 that takes delay to answer each
// fetch, and counts the fetches started and ended.
type slowJWKS struct {
	url            string
	started, ended atomic.Int64
}

func startSlowJWKS(t *testing.T, delay time.Duration, keys jose.JSONWebKeySet) *slowJWKS {
	t.Helper()
	s := &slowJWKS{}
	body, err := json.Marshal(keys)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.started.Add(1)
		time.Sleep(delay)
		_, _ = w.Write(body)
		s.ended.Add(1)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// signedWith is a compact JWS signed by key, naming kid.
func signedWith(t *testing.T, key *rsa.PrivateKey, kid string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithHeader(jose.HeaderKey("kid"), kid))
	require.NoError(t, err)
	jws, err := signer.Sign([]byte(`{"sub":"x"}`))
	require.NoError(t, err)
	raw, err := jws.CompactSerialize()
	require.NoError(t, err)
	return raw
}

// TestUnknownKidsShareOneFetch: four tokens naming keys the issuer does not
// have arrive together in front of a slow key endpoint (500 ms, slower than
// MinRefetch); each waits for at most one fetch, and together they fetch
// once (issue 44, C1: they fetched one after the other, the fourth waiting
// for four fetches, 8, 16, 24 and 32 s behind an 8 s endpoint). A token
// right after it, with another unknown kid, fetches nothing: MinRefetch
// counts from the end of the last fetch, not its start.
func TestUnknownKidsShareOneFetch(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	jwks := startSlowJWKS(t, 500*time.Millisecond, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: key.Public(), KeyID: "known", Algorithm: string(jose.RS256), Use: "sig"},
	}})
	ks := &keySet{url: jwks.url, client: http.DefaultClient, algs: []jose.SignatureAlgorithm{jose.RS256},
		maxAge: time.Hour, minRefetch: 2 * time.Second}
	ctx := context.Background()
	after := signedWith(t, key, "unknown-4") // signed now: no RSA work between the fetch's end and its use

	const callers = 4
	waited := make([]int64, callers) // fetches that ended while each waited
	var wg sync.WaitGroup
	for i := range callers {
		token := signedWith(t, key, fmt.Sprintf("unknown-%d", i))
		wg.Go(func() {
			before := jwks.ended.Load()
			_, err := ks.VerifySignature(ctx, token)
			waited[i] = jwks.ended.Load() - before
			assert.ErrorContains(t, err, "signed by no key of the issuer")
		})
	}
	wg.Wait()
	for i, n := range waited {
		assert.LessOrEqual(t, n, int64(1), "caller %d waited for %d fetches", i, n)
	}
	assert.Equal(t, int64(1), jwks.started.Load(), "four unknown kids together fetch once")

	_, err = ks.VerifySignature(ctx, after)
	require.ErrorContains(t, err, "signed by no key of the issuer")
	assert.Equal(t, int64(1), jwks.started.Load(), "no fetch within MinRefetch of the last one's end")
	payload, err := ks.VerifySignature(ctx, signedWith(t, key, "known"))
	require.NoError(t, err, "a held key verifies without a fetch")
	assert.JSONEq(t, `{"sub":"x"}`, string(payload))
	assert.Equal(t, int64(1), ks.Fetches())
}
