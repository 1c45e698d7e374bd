package testenv

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// codeFlowRedirect is the test client's redirect URI: nothing listens
// there, the browser (a cookie jar and CheckRedirect) stops before it.
const codeFlowRedirect = "https://127.0.0.1:1/callback"

// browserLike is an HTTP client that keeps cookies and follows redirects,
// except the one to codeFlowRedirect: that response is the client's.
func browserLike(t *testing.T, o *OIDC) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Transport: o.transport, Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), codeFlowRedirect) {
				return http.ErrUseLastResponse
			}
			return nil
		}}
}

// postLogin posts the login form of auth request id and returns the
// response and its body.
func postLogin(t *testing.T, c *http.Client, o *OIDC, id, username, password string) (*http.Response, string) {
	t.Helper()
	resp, err := c.PostForm(o.Issuer+loginPath, url.Values{"authRequestID": {id}, "username": {username}, "password": {password}})
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestOIDCCodeFlow(t *testing.T) {
	o := StartOIDC(t)
	sub := o.AddUser(t, "alice", "correct horse", "operators", "fleet-admins")
	o.AddUser(t, "bob", "battery staple")
	clientID, secret := o.AddClient(t, codeFlowRedirect)
	ctx := t.Context()
	party, err := rp.NewRelyingPartyOIDC(ctx, o.Issuer, clientID, secret, codeFlowRedirect,
		[]string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail, "groups"}, rp.WithHTTPClient(o.HTTPClient()))
	require.NoError(t, err)
	verifier := "a-pkce-verifier-of-at-least-43-characters-0123456789"
	authURL := rp.AuthURL("the-state", party, rp.WithCodeChallenge(oidc.NewSHACodeChallenge(verifier)))

	c := browserLike(t, o)
	resp, err := c.Get(authURL)
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the login page")
	assert.Equal(t, loginPath, resp.Request.URL.Path)
	id := resp.Request.URL.Query().Get("authRequestID")
	require.NotEmpty(t, id)
	assert.Contains(t, string(page), `name="password"`)

	// A wrong password, or a user name of nobody, shows the form again.
	for _, u := range []string{"alice", "mallory"} {
		resp, body := postLogin(t, c, o, id, u, "wrong")
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, u)
		assert.Contains(t, body, `id="error"`, u)
		assert.Contains(t, body, "wrong user name or password", u)
		assert.Contains(t, body, `name="password"`, u)
	}
	// Another user's password is a wrong one too.
	resp, _ = postLogin(t, c, o, id, "alice", "battery staple")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	resp, _ = postLogin(t, c, o, id, "alice", "correct horse")
	require.Equal(t, http.StatusFound, resp.StatusCode, "op's callback redirects to the client")
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(back.String(), codeFlowRedirect+"?"), back.Redacted())
	assert.Equal(t, "the-state", back.Query().Get("state"))
	code := back.Query().Get("code")
	require.NotEmpty(t, code)

	_, err = rp.CodeExchange[*oidc.IDTokenClaims](ctx, code, party)
	require.Error(t, err, "PKCE: no verifier, no tokens")
	tokens, err := rp.CodeExchange[*oidc.IDTokenClaims](ctx, code, party, rp.WithCodeVerifier(verifier))
	require.NoError(t, err)
	checkUserTokens(t, ctx, o, party, tokens, clientID, sub)

	_, err = rp.CodeExchange[*oidc.IDTokenClaims](ctx, code, party, rp.WithCodeVerifier(verifier))
	assert.ErrorContains(t, err, "invalid_grant", "a code is good once")
}

// checkUserTokens checks alice's tokens: the ID token (verified by rp), the
// access token (a JWT the provider signed, for the client) and userinfo.
func checkUserTokens(t *testing.T, ctx context.Context, o *OIDC, party rp.RelyingParty,
	tokens *oidc.Tokens[*oidc.IDTokenClaims], clientID, sub string) {
	t.Helper()
	id := tokens.IDTokenClaims
	assert.Equal(t, o.Issuer, id.Issuer)
	assert.Equal(t, sub, id.Subject)
	assert.Equal(t, []string{clientID}, []string(id.Audience))
	assert.Equal(t, "alice", id.PreferredUsername)
	assert.Equal(t, "alice@solar.test", id.Email)
	assert.Equal(t, []any{"operators", "fleet-admins"}, id.Claims["groups"])
	assert.Equal(t, []string{"pwd"}, []string(id.AuthenticationMethodsReferences))
	assert.WithinDuration(t, time.Now().Add(userTokenLifetime), id.GetExpiration(), 10*time.Second)

	var access struct {
		Sub               string   `json:"sub"`
		Aud               []string `json:"aud"`
		PreferredUsername string   `json:"preferred_username"`
		Email             string   `json:"email"`
		Groups            []string `json:"groups"`
		ClientID          string   `json:"client_id"`
	}
	vctx := gooidc.ClientContext(ctx, o.HTTPClient())
	provider, err := gooidc.NewProvider(vctx, o.Issuer)
	require.NoError(t, err)
	at, err := provider.Verifier(&gooidc.Config{ClientID: clientID}).Verify(vctx, tokens.AccessToken)
	require.NoError(t, err, "the access token is a JWT the provider signed")
	require.NoError(t, at.Claims(&access))
	assert.Equal(t, sub, access.Sub)
	assert.Equal(t, []string{clientID}, access.Aud)
	assert.Equal(t, "alice", access.PreferredUsername)
	assert.Equal(t, "alice@solar.test", access.Email)
	assert.Equal(t, []string{"operators", "fleet-admins"}, access.Groups)
	assert.Equal(t, clientID, access.ClientID)

	info, err := rp.Userinfo[*oidc.UserInfo](ctx, tokens.AccessToken, oidc.BearerToken, sub, party)
	require.NoError(t, err)
	assert.Equal(t, "alice", info.PreferredUsername)
	assert.Equal(t, []any{"operators", "fleet-admins"}, info.Claims["groups"])
}
