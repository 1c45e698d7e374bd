package callout_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/solar-pipeline/solar/callout"
)

// claims are a good device token's claims for id, at now.
func claims(f *fleet, id string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": f.op.Issuer, "aud": []string{f.op.Audience}, "sub": "user-" + id,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"device_id": id,
	}
}

// TestRefusedAtConnect: each token below is refused by the callout, so the
// server refuses the connection; a good one in the same run is let in.
func TestRefusedAtConnect(t *testing.T) {
	f := startFleet(t, true, callout.Issuer{})
	good := claims(f, "A")
	with := func(k string, v any) string {
		c := claims(f, "A")
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return f.op.Sign(t, c)
	}
	hour := time.Hour
	// Each token, and the reason the verifier gives for it.
	cases := map[string]struct{ token, why string }{
		"no token":            {"", "no bearer token"},
		"not a JWT":           {"hello", "malformed jwt"},
		"expired":             {with("exp", time.Now().Add(-time.Minute).Unix()), "token is expired"},
		"not yet valid":       {with("nbf", time.Now().Add(hour).Unix()), "nbf"},
		"nbf past the skew":   {with("nbf", time.Now().Add(2*time.Minute).Unix()), "claim nbf is in the future"},
		"issued in future":    {with("iat", time.Now().Add(hour).Unix()), "claim iat is in the future"},
		"no iat":              {with("iat", nil), "no iat claim"},
		"no exp":              {with("exp", nil), "token is expired"},
		"wrong issuer":        {with("iss", "https://evil.example.com"), "issued by a different provider"},
		"wrong audience":      {with("aud", []string{"someone-else"}), "expected audience"},
		"missing device":      {with("device_id", nil), `no string claim "device_id"`},
		"device not a string": {with("device_id", 42), `no string claim "device_id"`},
		"wrong key":           {foreignSigned(t, good, "foreign"), "signed by no key of the issuer"},
		"wrong key, its kid":  {foreignSigned(t, good, f.op.KeyIDs()[len(f.op.KeyIDs())-1]), "signed by no key of the issuer"},
		"alg none":            {unsigned(good), `unexpected signature algorithm "none"`},
		"id with .":           {with("device_id", "a.b"), "invalid device id"},
		"id with *":           {with("device_id", "a*"), "invalid device id"},
		"id with >":           {with("device_id", "a>"), "invalid device id"},
		"id with space":       {with("device_id", "a b"), "invalid device id"},
		"id of 65 chars":      {with("device_id", strings.Repeat("a", 65)), "invalid device id"},
		"empty id":            {with("device_id", ""), "invalid device id"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := f.connect(t, "A", c.token, nil); err == nil {
				t.Fatal("connected")
			} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
				t.Fatalf("refused, but not for authorization: %v", err)
			}
			if c.token == "" {
				return
			}
			if _, err := f.verifier.Verify(context.Background(), c.token); err == nil || !strings.Contains(err.Error(), c.why) {
				t.Fatalf("the verifier says %v, want %q", err, c.why)
			}
		})
	}
	if _, err := f.connect(t, "A", f.op.Sign(t, good), nil); err != nil {
		t.Fatalf("a good token refused: %v", err)
	}
	if _, err := f.connect(t, "A", f.op.Sign(t, claims(f, strings.Repeat("a", 64))), nil); err != nil {
		t.Fatalf("a 64-char id refused: %v", err)
	}
	allowed, refusedN := f.svc.Counts()
	if allowed != 2 || refusedN != int64(len(cases)) {
		t.Fatalf("callout counted %d allowed, %d refused; want 2, %d", allowed, refusedN, len(cases))
	}
}

// foreignSigned signs c with a key the provider never published, under
// kid.
func foreignSigned(t *testing.T, c map[string]any, kid string) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c)
	jws, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// unsigned is c as a JWT with alg none and no signature.
func unsigned(c map[string]any) string {
	enc := base64.RawURLEncoding
	b, _ := json.Marshal(c)
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc.EncodeToString(b) + "."
}
