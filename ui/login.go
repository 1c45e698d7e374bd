package ui

import (
	"cmp"
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
	// UsernameClaim and UsernamePrefix name the Kubernetes user, as the
	// API server's --oidc-username-claim and --oidc-username-prefix do
	// (default claim sub; prefix "-" for none, unset the issuer and "#"
	// but for the email claim); GroupsClaim (default groups) and
	// GroupsPrefix its groups.
	// A name or group that starts with "system:" is refused: no login
	// becomes a Kubernetes system user or group.
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
	o.UsernameClaim = cmp.Or(o.UsernameClaim, "sub")
	switch { // the API server's rule: "-" is none; unset, the issuer# but for email
	case o.UsernamePrefix == "-":
		o.UsernamePrefix = ""
	case o.UsernamePrefix == "" && o.UsernameClaim != "email":
		o.UsernamePrefix = o.Issuer + "#"
	}
	if o.ClientSecret == "" && len(o.CookieKey) == 0 {
		return nil, fmt.Errorf("the OpenID client needs a secret (or OIDCOptions.CookieKey): it keys the login's cookies")
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	seed := o.CookieKey
	if len(seed) == 0 {
		seed = []byte(o.ClientSecret)
	}
	hash := sha256.Sum256(append([]byte("solar-ui cookie signing\x00"), seed...))
	crypt := sha256.Sum256(append([]byte("solar-ui cookie encryption\x00"), seed...))
	cookies := httphelper.NewCookieHandler(hash[:], crypt[:])
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
	l := s.login.Load()
	if l == nil {
		http.Error(w, "no login is ready: no --oidc-issuer, or its provider not read yet", http.StatusServiceUnavailable)
		return
	}
	rp.AuthURLHandler(func() string { return random(16) }, l.rp)(w, r)
}

func (s *Server) handleCallback(w http.ResponseWriter, r *http.Request) {
	l := s.login.Load()
	if l == nil {
		http.Error(w, "no login is ready: no --oidc-issuer, or its provider not read yet", http.StatusServiceUnavailable)
		return
	}
	rp.CodeExchangeHandler(func(w http.ResponseWriter, r *http.Request, tokens *oidc.Tokens[*oidc.IDTokenClaims], _ string, _ rp.RelyingParty) {
		user, groups, err := l.identity(tokens.IDTokenClaims)
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		s.sessions.end(w, r) // a session the browser had before is not kept
		s.sessions.start(w, user, groups)
		s.opts.Log.Info("logged in", "user", user, "groups", groups)
		http.Redirect(w, r, "/", http.StatusSeeOther)
	}, l.rp)(w, r)
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
	if l.opts.UsernameClaim == "email" && !bool(c.EmailVerified) {
		return "", nil, fmt.Errorf("the ID token's email is not verified: it cannot name the user")
	}
	user := l.opts.UsernamePrefix + name
	if strings.HasPrefix(user, "system:") {
		return "", nil, fmt.Errorf("the user %q would be a Kubernetes system user: refused", user)
	}
	var groups []string
	if list, ok := all[l.opts.GroupsClaim].([]any); ok {
		for _, g := range list {
			if s, ok := g.(string); ok && s != "" && !strings.HasPrefix(l.opts.GroupsPrefix+s, "system:") {
				groups = append(groups, l.opts.GroupsPrefix+s)
			}
		}
	}
	return user, groups, nil
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request, se *session) {
	if !se.validCSRF(r.PostFormValue("csrf")) {
		http.Error(w, "the form's token is missing or wrong (CSRF): reload the page", http.StatusForbidden)
		return
	}
	s.sessions.end(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
