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
// key it does not hold. One fetch at a time, shared: a token that wants the
// keys while a fetch is under way waits for that fetch and takes what it
// brought, never for a second one, so four unknown kids behind a slow key
// endpoint wait one fetch each, not one, two, three and four. A fetch
// starts at most minRefetch after the last one ended (so a flood of tokens
// with made-up key ids costs the issuer one request per fetch time plus
// minRefetch, however slow it answers), runs apart from the token that
// started it (its caller giving up does not cancel it for the others) and
// ends within fetchTimeout. A key the issuer removed is trusted until the
// next fetch (maxAge at most).
type keySet struct {
	url        string
	client     *http.Client
	algs       []jose.SignatureAlgorithm
	maxAge     time.Duration
	minRefetch time.Duration

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	fetched  time.Time // of the keys held
	ended    time.Time // of the last fetch, failed or not
	fetches  int64
	inflight *fetchCall // the fetch under way, nil when none
}

// fetchCall is one fetch of the key set, shared by every token that waits
// for it: done is closed when it ends, err says how.
type fetchCall struct {
	done chan struct{}
	err  error
}

// fetchTimeout bounds one fetch of the key set.
const fetchTimeout = 10 * time.Second

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
	keys, err := ks.current(ctx, kid)
	if err != nil {
		return nil, err
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
// when kid is not in it. It waits for at most one fetch: the one under way,
// or else the one it starts, if minRefetch has passed since the last one
// ended. A token whose key is held is verified meanwhile. A failed fetch
// keeps the keys held while they are younger than maxAge; past that, it
// fails closed.
func (ks *keySet) current(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	ks.mu.Lock()
	stale := time.Since(ks.fetched) > ks.maxAge
	// A token without a kid wants the keys only when they are stale.
	if !stale && (kid == "" || hasKey(ks.keys, kid)) {
		keys := ks.keys
		ks.mu.Unlock()
		return keys, nil
	}
	call := ks.inflight
	if call == nil && time.Since(ks.ended) >= ks.minRefetch {
		call = ks.start()
	}
	ks.mu.Unlock()
	var err error
	if call != nil {
		select {
		case <-call.done:
			err = call.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	ks.mu.Lock()
	keys, stale := ks.keys, time.Since(ks.fetched) > ks.maxAge
	ks.mu.Unlock()
	switch {
	case stale && err != nil:
		return nil, fmt.Errorf("fetching the issuer's keys: %w", err)
	case stale:
		return nil, errors.New("the issuer's keys are out of date and were fetched too recently to fetch again")
	}
	return keys, nil
}

// start starts a fetch, with ks.mu held; it runs on its own goroutine,
// bounded by fetchTimeout.
func (ks *keySet) start() *fetchCall {
	call := &fetchCall{done: make(chan struct{})}
	ks.inflight = call
	ks.fetches++
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		keys, err := ks.fetch(ctx)
		cancel()
		ks.mu.Lock()
		if err == nil {
			ks.keys, ks.fetched = keys, time.Now()
		}
		// From the end: a key endpoint slower than minRefetch is not
		// fetched back to back.
		ks.ended, ks.inflight, call.err = time.Now(), nil, err
		ks.mu.Unlock()
		close(call.done)
	}()
	return call
}

func (ks *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
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
