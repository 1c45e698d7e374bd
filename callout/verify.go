package callout

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"

	"github.com/solar-pipeline/solar/device/wire"
)

// Issuer says whose tokens are devices' and how they are checked.
type Issuer struct {
	// URL is the issuer (iss), an https URL; discovery is at
	// URL/.well-known/openid-configuration.
	URL string
	// Audience must be among the token's aud.
	Audience string
	// DeviceClaim names the claim that carries the device id (device_id).
	DeviceClaim string
	// Skew is the clock skew allowed on nbf and iat (30s).
	Skew time.Duration
	// Algorithms are the signature algorithms accepted (RS256).
	Algorithms []string
	// KeysMaxAge is how long a fetched key set is trusted (5m): a key the
	// issuer removed is refused at the next fetch.
	KeysMaxAge time.Duration
	// MinRefetch is the least time between two fetches of the key set or
	// of discovery (5s).
	MinRefetch time.Duration
	// HTTPClient fetches discovery and keys (the system's CAs, 15s).
	HTTPClient *http.Client
}

func (is Issuer) withDefaults() Issuer {
	if is.DeviceClaim == "" {
		is.DeviceClaim = "device_id"
	}
	if is.Skew == 0 {
		is.Skew = 30 * time.Second
	}
	if len(is.Algorithms) == 0 {
		is.Algorithms = []string{oidc.RS256}
	}
	if is.KeysMaxAge == 0 {
		is.KeysMaxAge = 5 * time.Minute
	}
	if is.MinRefetch == 0 {
		is.MinRefetch = 5 * time.Second
	}
	if is.HTTPClient == nil {
		is.HTTPClient = &http.Client{Timeout: 15 * time.Second}
	}
	return is
}

// Identity is what a verified token says.
type Identity struct {
	DeviceID string
	Expiry   time.Time
}

// Verifier checks device tokens against an issuer. Discovery runs at the
// first token (and again after a failure, at most once per MinRefetch):
// while the issuer cannot be reached, every token is refused.
type Verifier struct {
	is  Issuer
	now func() time.Time

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	keys     *keySet
	tried    time.Time
}

// NewVerifier is a Verifier for is.
func NewVerifier(is Issuer) *Verifier {
	return &Verifier{is: is.withDefaults(), now: time.Now}
}

// Verify checks, in this order, the token's signature against the issuer's
// keys, its issuer and audience, exp, nbf and iat (with Skew), and the
// device claim, and only then the device id's form.
func (v *Verifier) Verify(ctx context.Context, raw string) (Identity, error) {
	ov, err := v.oidcVerifier(ctx)
	if err != nil {
		return Identity{}, err
	}
	tok, err := ov.Verify(ctx, raw)
	if err != nil {
		return Identity{}, err
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, err
	}
	limit := v.now().Add(v.is.Skew)
	if err := notAfter("iat", claims["iat"], limit, true); err != nil {
		return Identity{}, err
	}
	if err := notAfter("nbf", claims["nbf"], limit, false); err != nil {
		return Identity{}, err
	}
	id, ok := claims[v.is.DeviceClaim].(string)
	if !ok {
		return Identity{}, fmt.Errorf("no string claim %q", v.is.DeviceClaim)
	}
	if err := wire.CheckDeviceID(id); err != nil {
		return Identity{}, fmt.Errorf("claim %q: %w", v.is.DeviceClaim, err)
	}
	return Identity{DeviceID: id, Expiry: tok.Expiry}, nil
}

// notAfter checks that the time claim name, a NumericDate, is not after
// limit; required says whether it must be there.
func notAfter(name string, v any, limit time.Time, required bool) error {
	if v == nil {
		if required {
			return fmt.Errorf("no %s claim", name)
		}
		return nil
	}
	f, ok := v.(float64)
	if !ok {
		return fmt.Errorf("claim %s is not a number", name)
	}
	if t := time.Unix(int64(f), 0); t.After(limit) {
		return fmt.Errorf("claim %s is in the future (%s)", name, t.UTC().Format(time.RFC3339))
	}
	return nil
}

// oidcVerifier runs discovery once it succeeds.
func (v *Verifier) oidcVerifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	if time.Since(v.tried) < v.is.MinRefetch {
		return nil, errors.New("the issuer's discovery failed moments ago")
	}
	// From the end: the tokens queued on v.mu behind a slow discovery that
	// failed are refused at once, not each after a discovery of its own.
	// A discovery the caller gave up on (its context ended: a request
	// abandoned, the callout stopping) says nothing of the issuer and
	// refuses no one after it.
	caller := ctx
	defer func() {
		if caller.Err() == nil {
			v.tried = time.Now()
		}
	}()
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, v.is.HTTPClient), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, v.is.URL)
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", v.is.URL, err)
	}
	var meta struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&meta); err != nil || meta.JWKS == "" {
		return nil, fmt.Errorf("discovery of %s: no jwks_uri", v.is.URL)
	}
	var algs []jose.SignatureAlgorithm
	for _, a := range v.is.Algorithms {
		algs = append(algs, jose.SignatureAlgorithm(a))
	}
	v.keys = &keySet{url: meta.JWKS, client: v.is.HTTPClient, algs: algs, maxAge: v.is.KeysMaxAge, minRefetch: v.is.MinRefetch}
	v.verifier = oidc.NewVerifier(v.is.URL, v.keys, &oidc.Config{ClientID: v.is.Audience, SupportedSigningAlgs: v.is.Algorithms, Now: v.now})
	return v.verifier, nil
}

// KeyFetches is how many times the issuer's key set was fetched.
func (v *Verifier) KeyFetches() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keys == nil {
		return 0
	}
	return v.keys.Fetches()
}
