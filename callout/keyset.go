package callout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// keySet is the issuer's JSON Web Key Set (an oidc.KeySet): fetched over
// HTTPS, cached for maxAge, and fetched again at once when a token names a
// key it does not hold, at most once per minRefetch, so that a flood of
// tokens with made-up key ids costs the issuer one request per minRefetch.
// A key the issuer removed is trusted until the next fetch (maxAge at most).
type keySet struct {
	url        string
	client     *http.Client
	algs       []jose.SignatureAlgorithm
	maxAge     time.Duration
	minRefetch time.Duration

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	fetched  time.Time // of the keys held
	tried    time.Time // of the last fetch, failed or not
	fetches  int64
	inflight chan struct{} // closed when the fetch under way ends
}

// maxJWKS bounds a key set's size.
const maxJWKS = 1 << 20

// VerifySignature returns the payload of a compact JWS signed by a key of
// the set. The algorithm must be one of ks.algs ("none" never is).
func (ks *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, ks.algs)
	if err != nil {
		return nil, fmt.Errorf("not a signed JWT: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("not a JWT with one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, err := ks.current(ctx, "")
	if err != nil {
		return nil, err
	}
	if !hasKey(keys, kid) {
		if keys, err = ks.current(ctx, kid); err != nil {
			return nil, err
		}
	}
	for _, k := range keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(k); err == nil {
			return payload, nil
		}
	}
	return nil, fmt.Errorf("signed by no key of the issuer (kid %q)", kid)
}

func hasKey(keys []jose.JSONWebKey, kid string) bool {
	for _, k := range keys {
		if k.KeyID == kid {
			return true
		}
	}
	return false
}

// current is the key set, fetched again when it is older than maxAge, or
// when missing (a token's kid) is not in it; either way at most once per
// minRefetch. The fetch runs outside the lock: a token whose key is held
// is verified meanwhile; one that wants the fetch waits for it. A failed
// fetch keeps the keys held while they are younger than maxAge; past that,
// it fails closed.
func (ks *keySet) current(ctx context.Context, missing string) ([]jose.JSONWebKey, error) {
	for {
		ks.mu.Lock()
		stale := time.Since(ks.fetched) > ks.maxAge
		want := stale || (missing != "" && !hasKey(ks.keys, missing))
		if want && ks.inflight != nil {
			ch := ks.inflight
			ks.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var err error
		if want && time.Since(ks.tried) >= ks.minRefetch {
			err = ks.refetch(ctx)
			stale = time.Since(ks.fetched) > ks.maxAge
		}
		keys := ks.keys
		ks.mu.Unlock()
		switch {
		case stale && err != nil:
			return nil, fmt.Errorf("fetching the issuer's keys: %w", err)
		case stale:
			return nil, errors.New("the issuer's keys are out of date and were fetched too recently to fetch again")
		}
		return keys, nil
	}
}

// refetch fetches the key set, with ks.mu held on entry and on return but
// not while fetching.
func (ks *keySet) refetch(ctx context.Context) error {
	ks.tried = time.Now()
	ks.fetches++
	ch := make(chan struct{})
	ks.inflight = ch
	ks.mu.Unlock()
	keys, err := ks.fetch(ctx)
	ks.mu.Lock()
	ks.inflight = nil
	close(ch)
	if err == nil {
		ks.keys, ks.fetched = keys, time.Now()
	}
	return err
}

func (ks *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", ks.url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxJWKS {
		return nil, fmt.Errorf("%s: key set over %d bytes", ks.url, maxJWKS)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("%s: %w", ks.url, err)
	}
	var keys []jose.JSONWebKey
	for _, k := range set.Keys {
		if k.Valid() && k.IsPublic() && (k.Use == "" || k.Use == "sig") {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// Fetches is how many times the key set was fetched.
func (ks *keySet) Fetches() int64 {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.fetches
}
