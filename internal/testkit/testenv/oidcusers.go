package testenv

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The authorization code flow for people (AddUser) and web clients
// (AddClient), the way zitadel/oidc's example server lays it out: op parses
// and checks the authorization request and hands it to CreateAuthRequest,
// then redirects the browser to the client's LoginURL with the request's
// id; the login page (oidclogin.go) checks the password and marks the
// request done with the user's id (login), and sends the browser to op's
// callback, which asks AuthRequestByID whether it is Done, makes a code
// (SaveAuthCode) and redirects to the client's redirect_uri. The token
// endpoint finds the request again by code (AuthRequestByCode), checks the
// client's secret (AuthorizeClientIDSecret) and the PKCE verifier, makes
// the tokens (CreateAccessToken, GetPrivateClaimsFromScopes for the access
// token, SetUserinfoFromRequest for the ID token) and forgets the request
// and its code (DeleteAuthRequest): a code is good once.

// userTokenLifetime is how long a user's ID and access tokens live.
const userTokenLifetime = time.Hour

// groupsScope is the scope a client may ask for the groups claim with; the
// tokens carry the claim whether it asks or not.
const groupsScope = "groups"

// errLogin is the one answer to a wrong user name or password: the login
// page does not say which was wrong.
var errLogin = errors.New("wrong user name or password")

// oidcUser is a person who logs in with a password.
type oidcUser struct {
	id, username, password, email string
	groups                        []string
}

// oidcClient is a confidential web client: it authenticates at the token
// endpoint with its secret (HTTP Basic, or in the form), and may add PKCE.
type oidcClient struct {
	id, secret   string
	redirectURIs []string
}

func (c *oidcClient) GetID() string                       { return c.id }
func (c *oidcClient) RedirectURIs() []string              { return c.redirectURIs }
func (c *oidcClient) PostLogoutRedirectURIs() []string    { return nil }
func (c *oidcClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *oidcClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *oidcClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *oidcClient) GrantTypes() []oidc.GrantType         { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c *oidcClient) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *oidcClient) IDTokenLifetime() time.Duration       { return userTokenLifetime }
func (c *oidcClient) DevMode() bool                        { return false }
func (c *oidcClient) IsScopeAllowed(scope string) bool     { return scope == groupsScope }
func (c *oidcClient) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *oidcClient) ClockSkew() time.Duration             { return 0 }
func (c *oidcClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (c *oidcClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// LoginURL is the login page, on the provider itself, for auth request id.
func (c *oidcClient) LoginURL(id string) string {
	return loginPath + "?" + url.Values{"authRequestID": {id}}.Encode()
}

// authRequest is op.AuthRequest: what the client asked for, and, once the
// user logged in, who. The store hands out copies, so that op reads a
// request while the login page may write it.
type authRequest struct {
	id, clientID, redirectURI, state, nonce string
	scopes                                  []string
	responseType                            oidc.ResponseType
	responseMode                            oidc.ResponseMode
	challenge                               *oidc.CodeChallenge
	userID                                  string    // set by the login
	authTime                                time.Time // set by the login
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAudience() []string                 { return []string{a.clientID} }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.userID }
func (a *authRequest) Done() bool                            { return a.userID != "" }

// GetAMR says how the user logged in: with a password.
func (a *authRequest) GetAMR() []string {
	if a.Done() {
		return []string{"pwd"}
	}
	return nil
}

// CreateAuthRequest keeps a checked authorization request until the login.
// There is no session at the provider: prompt=none cannot be answered.
func (s *oidcStore) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if slices.Contains(r.Prompt, oidc.PromptNone) {
		return nil, oidc.ErrLoginRequired()
	}
	a := &authRequest{id: uuid.NewString(), clientID: r.ClientID, redirectURI: r.RedirectURI, state: r.State,
		nonce: r.Nonce, scopes: slices.Clone(r.Scopes), responseType: r.ResponseType, responseMode: r.ResponseMode}
	if r.CodeChallenge != "" {
		a.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authRequests[a.id] = a
	c := *a
	return &c, nil
}

// AuthRequestByID is the request id, as it is now.
func (s *oidcStore) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.authRequests[id]
	if !ok {
		return nil, fmt.Errorf("auth request %q: not found", id)
	}
	c := *a
	return &c, nil
}

// AuthRequestByCode is the request code was made for.
func (s *oidcStore) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.RLock()
	id, ok := s.codes[code]
	s.mu.RUnlock()
	if !ok {
		return nil, errors.New("code unknown or used")
	}
	return s.AuthRequestByID(ctx, id)
}

// SaveAuthCode remembers which request code belongs to.
func (s *oidcStore) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest forgets request id and its code.
func (s *oidcStore) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.authRequests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

// login checks username and password and, when they match, marks auth
// request id done by that user. The error never says which was wrong.
func (s *oidcStore) login(id, username, password string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[id]
	if !ok {
		return fmt.Errorf("auth request %q: not found (log in again from the application)", id)
	}
	u, ok := s.users[username]
	if !ok || subtle.ConstantTimeCompare([]byte(u.password), []byte(password)) != 1 {
		return errLogin
	}
	a.userID, a.authTime = u.id, time.Now()
	return nil
}

// user is the user userID, or an error.
func (s *oidcStore) user(userID string) (*oidcUser, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u, ok := s.usersByID[userID]
	if !ok {
		return nil, fmt.Errorf("user %q: not found", userID)
	}
	return u, nil
}

// GetClientByClientID is a client AddClient registered.
func (s *oidcStore) GetClientByClientID(_ context.Context, clientID string) (op.Client, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.clients[clientID]
	if !ok {
		return nil, fmt.Errorf("client %q: not found", clientID)
	}
	return c, nil
}

// AuthorizeClientIDSecret checks a client's secret at the token endpoint.
func (s *oidcStore) AuthorizeClientIDSecret(ctx context.Context, clientID, secret string) error {
	c, err := s.GetClientByClientID(ctx, clientID)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(c.(*oidcClient).secret), []byte(secret)) != 1 {
		return fmt.Errorf("client %q: wrong secret", clientID)
	}
	return nil
}

// SetUserinfoFromRequest is the ID token's claims about the user: sub,
// preferred_username with the scope profile, email with the scope email,
// and groups always.
func (s *oidcStore) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, r op.IDTokenRequest, scopes []string) error {
	return s.setUserinfo(info, r.GetSubject(), scopes)
}

// SetUserinfoFromToken is the userinfo endpoint's answer for a user's
// access token (op has checked the token already).
func (s *oidcStore) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, _, subject, _ string) error {
	return s.setUserinfo(info, subject, []string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail})
}

func (s *oidcStore) setUserinfo(info *oidc.UserInfo, userID string, scopes []string) error {
	u, err := s.user(userID)
	if err != nil {
		return err
	}
	info.Subject = u.id
	if slices.Contains(scopes, oidc.ScopeProfile) {
		info.PreferredUsername = u.username
	}
	if slices.Contains(scopes, oidc.ScopeEmail) {
		info.Email, info.EmailVerified = u.email, true
	}
	info.AppendClaims("groups", append([]string{}, u.groups...))
	return nil
}

// userClaims are a user's access token's private claims.
func (u *oidcUser) claims() map[string]any {
	return map[string]any{"preferred_username": u.username, "email": u.email, "groups": append([]string{}, u.groups...)}
}

var (
	_ op.AuthRequest               = (*authRequest)(nil)
	_ op.Client                    = (*oidcClient)(nil)
	_ op.CanSetUserinfoFromRequest = (*oidcStore)(nil)
)
