package callout_test

import (
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
	cases := map[string]string{
		"no token":            "",
		"not a JWT":           "hello",
		"expired":             with("exp", time.Now().Add(-time.Minute).Unix()),
		"not yet valid":       with("nbf", time.Now().Add(hour).Unix()),
		"issued in future":    with("iat", time.Now().Add(hour).Unix()),
		"no iat":              with("iat", nil),
		"wrong issuer":        with("iss", "https://evil.example.com"),
		"wrong audience":      with("aud", []string{"someone-else"}),
		"missing device":      with("device_id", nil),
		"device not a string": with("device_id", 42),
		"wrong key":           foreignSigned(t, good),
		"alg none":            unsigned(good),
		"id with .":           with("device_id", "a.b"),
		"id with *":           with("device_id", "a*"),
		"id with >":           with("device_id", "a>"),
		"id with space":       with("device_id", "a b"),
		"id of 65 chars":      with("device_id", strings.Repeat("a", 65)),
		"empty id":            with("device_id", ""),
	}
	for name, token := range cases {
		t.Run(name, func(t *testing.T) {
			_, allowedBefore := f.svc.Counts()
			_ = allowedBefore
			if _, err := f.connect(t, "A", token, nil); err == nil {
				t.Fatal("connected")
			} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
				t.Fatalf("refused, but not for authorization: %v", err)
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
// the kid of none of its keys.
func foreignSigned(t *testing.T, c map[string]any) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k, KeyID: "foreign"}}, (&jose.SignerOptions{}).WithType("JWT"))
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
