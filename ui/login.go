package ui

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// OIDCOptions are the login: the provider, the UI's client there, and which
// claims name the user and their groups for Kubernetes (as the SolAr API
// server's own OIDC settings name them).
type OIDCOptions struct {
	Issuer, ClientID, ClientSecret string
	// RedirectURL is where the provider sends the browser back:
	// https://HOST/auth/callback.
	RedirectURL string
	// UsernameClaim (default preferred_username) and UsernamePrefix name
	// the Kubernetes user; GroupsClaim (default groups) and GroupsPrefix
	// its groups.
	UsernameClaim, UsernamePrefix, GroupsClaim, GroupsPrefix string
	// HTTPClient reaches the provider (nil: http.DefaultClient); give it
	// the provider's CA and a timeout.
	HTTPClient *http.Client
	// CookieKey signs and encrypts the login's state and PKCE cookies (32
	// bytes; derived from ClientSecret when empty).
	CookieKey []byte
}

// login is the relying party: the authorization code flow with PKCE.
type login struct {
	rp       rp.RelyingParty
	opts     OIDCOptions
	sessions *sessions
}

func newLogin(ctx context.Context, o OIDCOptions, s *sessions) (*login, error) {
	if o.UsernameClaim == "" {
		o.UsernameClaim = "preferred_username"
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	key := o.CookieKey
	if len(key) == 0 {
		sum := sha256.Sum256([]byte("solar-ui-cookies\x00" + o.ClientSecret))
		key = sum[:]
	}
	cookies := httphelper.NewCookieHandler(key, key)
	opts := []rp.Option{rp.WithPKCE(cookies)}
	if o.HTTPClient != nil {
		opts = append(opts, rp.WithHTTPClient(o.HTTPClient))
	}
	party, err := rp.NewRelyingPartyOIDC(ctx, o.Issuer, o.ClientID, o.ClientSecret, o.RedirectURL,
		[]string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail, "groups"}, opts...)
	if err != nil {
		return nil, fmt.Errorf("the OpenID provider %s: %w", o.Issuer, err)
	}
	return &login{rp: party, opts: o, sessions: s}, nil
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if s.login == nil {
		http.Error(w, "no login is configured (--oidc-issuer)", http.StatusServiceUnavailable)
		return
	}
	rp.AuthURLHandler(func() string { return random(16) }, s.login.rp)(w, r)
}

func (s *Server) handleCallback(w http.ResponseWriter, r *http.Request) {
	if s.login == nil {
		http.Error(w, "no login is configured (--oidc-issuer)", http.StatusServiceUnavailable)
		return
	}
	rp.CodeExchangeHandler(func(w http.ResponseWriter, r *http.Request, tokens *oidc.Tokens[*oidc.IDTokenClaims], _ string, _ rp.RelyingParty) {
		user, groups, err := s.login.identity(tokens.IDTokenClaims)
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		s.sessions.start(w, user, groups)
		s.opts.Log.Info("logged in", "user", user, "groups", groups)
		http.Redirect(w, r, "/", http.StatusSeeOther)
	}, s.login.rp)(w, r)
}

// identity is the Kubernetes user and groups of the ID token's claims.
func (l *login) identity(c *oidc.IDTokenClaims) (string, []string, error) {
	all := map[string]any{"sub": c.Subject, "preferred_username": c.PreferredUsername, "email": c.Email}
	for k, v := range c.Claims {
		all[k] = v
	}
	name, _ := all[l.opts.UsernameClaim].(string)
	if strings.TrimSpace(name) == "" {
		return "", nil, fmt.Errorf("the ID token has no claim %s to name the user", l.opts.UsernameClaim)
	}
	var groups []string
	if list, ok := all[l.opts.GroupsClaim].([]any); ok {
		for _, g := range list {
			if s, ok := g.(string); ok && s != "" {
				groups = append(groups, l.opts.GroupsPrefix+s)
			}
		}
	}
	return l.opts.UsernamePrefix + name, groups, nil
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request, se *session) {
	if !se.validCSRF(r.PostFormValue("csrf")) {
		http.Error(w, "the form's token is missing or wrong (CSRF): reload the page", http.StatusForbidden)
		return
	}
	s.sessions.end(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
