package updater

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxTokenAnswer bounds a token endpoint's answer: a token is a few KiB.
const maxTokenAnswer = 1 << 20

// challenge is a 401's "WWW-Authenticate: Bearer realm=...,service=...,
// scope=..." (the distribution token authentication spec).
type challenge struct{ realm, service, scope string }

// withToken answers a 401 that carries a Bearer challenge: a token from the
// challenge's realm, asked with the login of the challenging registry (none:
// an anonymous token) and for pulling only, and the request once more with
// it. A 401 without such a
// challenge is returned as it is. The token goes to the request's host only:
// a redirect's request is built from the original, without it.
func (t *authTransport) withToken(req *http.Request, resp *http.Response) (*http.Response, error) {
	ch, ok := bearerChallenge(resp.Header.Values("WWW-Authenticate"))
	if !ok {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	token, err := t.token(req, ch)
	if err != nil {
		return nil, fmt.Errorf("getting a registry token: %w", err)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return t.base.RoundTrip(r)
}

// token asks the realm for a token (GET realm?service=...&scope=...), over
// https, bounded by the request's context and the transport's timeouts; the
// answer is read up to maxTokenAnswer. Errors never quote the answer.
func (t *authTransport) token(orig *http.Request, ch challenge) (string, error) {
	realm, err := url.Parse(ch.realm)
	if err != nil {
		return "", errors.New("the challenge's realm is not a URL")
	}
	if err := checkURL(realm); err != nil {
		return "", fmt.Errorf("the realm %w", err)
	}
	q := realm.Query()
	if ch.service != "" {
		q.Set("service", ch.service)
	}
	for _, s := range strings.Fields(ch.scope) {
		q.Add("scope", pullOnly(s))
	}
	realm.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(orig.Context(), http.MethodGet, realm.String(), nil)
	if err != nil {
		return "", err
	}
	// The login is the challenging registry's, as Docker's: a host without
	// one (any host the agent names in an attempt) gets an anonymous token,
	// never one made with another host's login.
	if l, ok := t.creds.lookup(orig.URL.Host); ok {
		req.SetBasicAuth(l.username, l.password)
	}
	resp, err := t.base.RoundTrip(req) // no redirect followed
	if err != nil {
		return "", redactError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", redactURL(realm), resp.Status)
	}
	var answer struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenAnswer)).Decode(&answer); err != nil {
		return "", fmt.Errorf("GET %s: the answer is not a token", redactURL(realm))
	}
	if answer.Token == "" {
		answer.Token = answer.AccessToken
	}
	if answer.Token == "" {
		return "", fmt.Errorf("GET %s: the answer holds no token", redactURL(realm))
	}
	return answer.Token, nil
}

// bearerChallenge finds a Bearer challenge with a realm among the values of
// WWW-Authenticate.
func bearerChallenge(values []string) (challenge, bool) {
	for _, v := range values {
		scheme, rest, _ := strings.Cut(strings.TrimSpace(v), " ")
		if !strings.EqualFold(scheme, "bearer") {
			continue
		}
		p := authParams(rest)
		if p["realm"] != "" {
			return challenge{realm: p["realm"], service: p["service"], scope: p["scope"]}, true
		}
	}
	return challenge{}, false
}

// authParams reads the comma-separated key=token and key="quoted string"
// parameters of a challenge (RFC 9110 section 11.2).
func authParams(s string) map[string]string {
	m := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t,")
		key, rest, ok := strings.Cut(s, "=")
		if !ok {
			return m
		}
		key = strings.ToLower(strings.TrimSpace(key))
		var val string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			val, s = b.String(), rest[min(i+1, len(rest)):]
		} else {
			val, s, _ = strings.Cut(rest, ",")
			val = strings.TrimSpace(val)
		}
		m[key] = val
	}
}

// pullOnly narrows a scope "repository:NAME:ACTIONS" to pulling: whatever a
// registry's challenge asks for, the device's login never mints a token
// that may push or delete.
func pullOnly(scope string) string {
	if rest, ok := strings.CutPrefix(scope, "repository:"); ok {
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			return "repository:" + rest[:i] + ":pull"
		}
	}
	return scope
}
