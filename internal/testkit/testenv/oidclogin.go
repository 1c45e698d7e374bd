package testenv

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// loginPath is the provider's login page: a client's LoginURL, where op
// sends the browser with the auth request's id (authRequestID).
const loginPath = "/login"

// loginPage is the form; the tests find its fields by name and id:
// username, password, the button #login and, after a failed attempt, the
// message #error.
var loginPage = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in – Solar test OpenID Provider</title>
<style>
body { font-family: sans-serif; max-width: 22rem; margin: 3rem auto; padding: 0 1rem; }
label, input, button { display: block; box-sizing: border-box; width: 100%; margin: .25rem 0 .75rem; font-size: 1rem; }
#error { color: #a00000; font-weight: bold; }
</style>
</head>
<body>
<h1>Sign in</h1>
{{if .Error}}<p id="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="` + loginPath + `">
<input type="hidden" name="authRequestID" value="{{.ID}}">
<label for="username">User name</label>
<input id="username" name="username" autocomplete="username" value="{{.Username}}" required autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button id="login" type="submit">Sign in</button>
</form>
</body>
</html>
`))

// login serves the login page: GET shows the form for the auth request
// authRequestID, POST checks the user name and password and, when they
// match, sends the browser to op's callback (callback(id)), which redirects
// to the client with a code. A wrong user name or password shows the form
// again, with an error and status 401.
func (o *OIDC) login(callback func(id string) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "reading the form: "+err.Error(), http.StatusBadRequest)
			return
		}
		id, username := r.FormValue("authRequestID"), r.FormValue("username")
		if id == "" {
			http.Error(w, "no authRequestID: start from the application", http.StatusBadRequest)
			return
		}
		data := struct{ ID, Username, Error string }{ID: id, Username: username}
		status := http.StatusOK
		if r.Method == http.MethodPost {
			err := o.store.login(id, username, r.FormValue("password"))
			if err == nil {
				http.Redirect(w, r, callback(id), http.StatusSeeOther)
				return
			}
			data.Error, status = err.Error(), http.StatusUnauthorized
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = loginPage.Execute(w, data)
	}
}

// AddUser registers a person who logs in on the provider's login page with
// username and password, and returns the user's id (the tokens' sub, a
// number as Zitadel's are). The user's ID token carries sub,
// preferred_username (with the scope profile), email (username@solar.test,
// with the scope email) and groups (always; [] without any); the access
// token, a JWT, carries sub, preferred_username, email and groups, and its
// aud is the client. A user name may be added once.
func (o *OIDC) AddUser(t testing.TB, username, password string, groups ...string) (userID string) {
	t.Helper()
	require.NotEmpty(t, username, "user name")
	require.NotEmpty(t, password, "password")
	u := &oidcUser{id: fmt.Sprint(330000000000000000 + o.users.Add(1)), username: username, password: password,
		email: username + "@solar.test", groups: append([]string{}, groups...)}
	o.store.mu.Lock()
	_, dup := o.store.users[username]
	if !dup {
		o.store.users[username], o.store.usersByID[u.id] = u, u
	}
	o.store.mu.Unlock()
	require.False(t, dup, "user %q added twice", username)
	return u.id
}

// AddClient registers a confidential web client for the authorization code
// flow, and returns its id and secret. The client authenticates at the
// token endpoint with the secret (HTTP Basic, or client_secret_post), may
// add PKCE (S256), may ask for the scopes openid, profile, email and
// groups, and may send users back to redirectURIs only (each exactly as
// given, https). There are no refresh tokens.
func (o *OIDC) AddClient(t testing.TB, redirectURIs ...string) (clientID, clientSecret string) {
	t.Helper()
	require.NotEmpty(t, redirectURIs, "a client needs a redirect URI")
	for _, u := range redirectURIs {
		p, err := url.Parse(u)
		require.NoError(t, err, "redirect URI")
		require.Equal(t, "https", p.Scheme, "redirect URI %s: the provider sends users to https only", u)
	}
	secret := make([]byte, 32)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	c := &oidcClient{id: fmt.Sprint(340000000000000000 + o.clients.Add(1)),
		secret: base64.RawURLEncoding.EncodeToString(secret), redirectURIs: append([]string{}, redirectURIs...)}
	o.store.mu.Lock()
	o.store.clients[c.id] = c
	o.store.mu.Unlock()
	return c.id, c.secret
}
