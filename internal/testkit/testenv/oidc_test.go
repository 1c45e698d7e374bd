package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deviceClaims are the claims of a device token the tests look at.
type deviceClaims struct {
	DeviceID string   `json:"device_id"`
	Aud      []string `json:"aud"`
	Exp      int64    `json:"exp"`
	Iat      int64    `json:"iat"`
	Nbf      int64    `json:"nbf"`
	ClientID string   `json:"client_id"`
}

// verifier discovers o through go-oidc, as the auth callout will, and
// returns a verifier with a JWKS cache of its own and the context to
// verify with.
func verifier(t *testing.T, o *OIDC) (*oidc.IDTokenVerifier, context.Context) {
	t.Helper()
	ctx := oidc.ClientContext(t.Context(), o.HTTPClient())
	provider, err := oidc.NewProvider(ctx, o.Issuer)
	require.NoError(t, err)
	return provider.Verifier(&oidc.Config{ClientID: o.Audience}), ctx
}

// kid is the key id in a JWT's header.
func kid(t *testing.T, jwt string) string {
	t.Helper()
	jws, err := jose.ParseSigned(jwt, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	require.Len(t, jws.Signatures, 1)
	return jws.Signatures[0].Header.KeyID
}

func TestOIDCDeviceToken(t *testing.T) {
	o := StartOIDC(t)
	assert.Equal(t, "solar-fleet", o.Audience)
	assert.True(t, strings.HasPrefix(o.Issuer, "https://127.0.0.1:"), o.Issuer)
	keyFile := o.AddDevice(t, "dev-1")
	var kf map[string]string
	require.NoError(t, json.Unmarshal(keyFile, &kf))
	assert.Equal(t, "serviceaccount", kf["type"])
	assert.NotEmpty(t, kf["keyId"])
	assert.NotEmpty(t, kf["userId"])
	assert.True(t, strings.HasPrefix(kf["key"], "-----BEGIN RSA PRIVATE KEY-----\n"), kf["key"])

	v, ctx := verifier(t, o)
	tok := o.Token(t, keyFile)
	idt, err := v.Verify(ctx, tok)
	require.NoError(t, err)
	assert.Equal(t, o.Issuer, idt.Issuer)
	assert.Equal(t, kf["userId"], idt.Subject)
	assert.Contains(t, idt.Audience, o.Audience)
	assert.WithinDuration(t, time.Now().Add(5*time.Minute), idt.Expiry, 5*time.Second)
	var c deviceClaims
	require.NoError(t, idt.Claims(&c))
	assert.Equal(t, "dev-1", c.DeviceID)
	assert.Equal(t, kf["userId"], c.ClientID)
	assert.NotZero(t, c.Iat)
	assert.NotZero(t, c.Nbf)
	assert.Equal(t, o.KeyIDs(), []string{kid(t, tok)})
	assert.EqualValues(t, 1, o.JWKSFetches(), "one verification, one JWKS fetch")

	resp, err := o.HTTPClient().Get(o.Issuer + "/.well-known/openid-configuration")
	require.NoError(t, err)
	resp.Body.Close()
	assert.EqualValues(t, 1, o.JWKSFetches(), "only the JWKS counts")

	other, err := oidc.NewProvider(ctx, o.Issuer)
	require.NoError(t, err)
	_, err = other.Verifier(&oidc.Config{ClientID: "not-solar"}).Verify(ctx, tok)
	require.ErrorContains(t, err, "audience", "another audience is refused")

	o.SetTokenLifetime(time.Minute)
	idt, err = v.Verify(ctx, o.Token(t, keyFile))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(time.Minute), idt.Expiry, 5*time.Second)
}

// The grant checks the assertion: a key file with another key id, or of
// a user the provider does not know, gets no token.
func TestOIDCTokenRefusesUnknownKeys(t *testing.T) {
	o := StartOIDC(t)
	var kf keyFile
	require.NoError(t, json.Unmarshal(o.AddDevice(t, "dev-1"), &kf))
	for name, edit := range map[string]func(*keyFile){
		"other key id": func(k *keyFile) { k.KeyID += "1" },
		"unknown user": func(k *keyFile) { k.UserID += "1" },
	} {
		k := kf
		edit(&k)
		b, err := json.Marshal(k)
		require.NoError(t, err)
		_, err = o.token(t.Context(), b)
		assert.ErrorContains(t, err, "invalid_grant", name)
	}
}

func TestOIDCRotateAndRetire(t *testing.T) {
	o := StartOIDC(t)
	oldKid := o.KeyIDs()[0]
	keyFile := o.AddDevice(t, "dev-1")
	oldTok := o.Token(t, keyFile)

	newKid := o.Rotate(t)
	assert.NotEqual(t, oldKid, newKid)
	assert.Equal(t, []string{oldKid, newKid}, o.KeyIDs(), "both published")
	newTok := o.Token(t, keyFile)
	assert.Equal(t, newKid, kid(t, newTok))
	assert.Equal(t, oldKid, kid(t, oldTok))
	v, ctx := verifier(t, o)
	for _, tok := range []string{oldTok, newTok} {
		_, err := v.Verify(ctx, tok)
		require.NoError(t, err)
	}
	signed := o.Sign(t, map[string]any{"iss": o.Issuer, "aud": o.Audience, "sub": "x",
		"exp": time.Now().Add(time.Minute).Unix()})
	assert.Equal(t, newKid, kid(t, signed), "Sign signs with the current key")

	o.Retire(t, oldKid)
	assert.Equal(t, []string{newKid}, o.KeyIDs())
	v, ctx = verifier(t, o)
	_, err := v.Verify(ctx, oldTok)
	require.ErrorContains(t, err, "failed to verify signature", "the retired key's token")
	_, err = v.Verify(ctx, newTok)
	require.NoError(t, err)
}

func TestOIDCSign(t *testing.T) {
	o := StartOIDC(t)
	v, ctx := verifier(t, o)
	now := time.Now()
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"iss": o.Issuer, "aud": []string{o.Audience}, "sub": "310000000000000099",
			"exp": now.Add(time.Minute).Unix(), "iat": now.Unix(), "device_id": "dev-9"}
		if edit != nil {
			edit(c)
		}
		return c
	}
	idt, err := v.Verify(ctx, o.Sign(t, claims(nil)))
	require.NoError(t, err)
	var c deviceClaims
	require.NoError(t, idt.Claims(&c))
	assert.Equal(t, "dev-9", c.DeviceID)

	for name, c := range map[string]struct {
		edit func(map[string]any)
		err  string
	}{
		"expired":       {func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() }, "token is expired"},
		"other aud":     {func(c map[string]any) { c["aud"] = "not-solar" }, "audience"},
		"other issuer":  {func(c map[string]any) { c["iss"] = "https://example.com" }, "different provider"},
		"not yet valid": {func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() }, "before the nbf"},
	} {
		_, err := v.Verify(ctx, o.Sign(t, claims(c.edit)))
		assert.ErrorContains(t, err, c.err, name)
	}
}

// Many devices get their tokens at once, as a fleet reconnecting does.
func TestOIDCTokensInParallel(t *testing.T) {
	o := StartOIDC(t)
	n := 1000
	if testing.Short() {
		n = 100
	}
	start := time.Now()
	keyFiles := make([][]byte, n)
	for i := range keyFiles {
		keyFiles[i] = o.AddDevice(t, fmt.Sprintf("dev-%d", i))
	}
	added := time.Since(start)
	start = time.Now()
	toks := o.Tokens(t, keyFiles)
	took := time.Since(start)
	t.Logf("%d devices added in %s, their tokens in %s (%s a token)", n, added, took, took/time.Duration(n))

	v, ctx := verifier(t, o)
	for i, tok := range toks {
		idt, err := v.Verify(ctx, tok)
		require.NoError(t, err)
		var c deviceClaims
		require.NoError(t, idt.Claims(&c))
		require.Equal(t, fmt.Sprintf("dev-%d", i), c.DeviceID)
	}
	assert.EqualValues(t, 1, o.JWKSFetches(), "go-oidc fetched the JWKS once for all of them")
}
