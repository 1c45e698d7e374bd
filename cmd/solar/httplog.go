package main

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// requestLog is, with --debug, what wraps the HTTP transports of the
// registry and the API server clients to log every request they send; nil
// otherwise.
func (g *globals) requestLog() func(http.RoundTripper) http.RoundTripper {
	if g == nil || !g.debug {
		return nil
	}
	return logRequests(g.log)
}

// logRequests wraps a transport so that log says, at debug, one line per
// request sent (each retry and redirect its own, as oras -d and kubectl -v=6
// do): the method, the URL without user information and with the values of
// query parameters that may be secrets redacted, then the status, the
// duration and the bytes sent and received when known. Never a header (the
// Authorization and Cookie headers carry the credentials) nor a body (a
// token response is one).
func logRequests(log *slog.Logger) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &loggedTransport{next: next, log: log}
	}
}

type loggedTransport struct {
	next http.RoundTripper
	log  *slog.Logger
}

func (t *loggedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	if !t.log.Enabled(req.Context(), slog.LevelDebug) {
		return resp, err
	}
	msg := req.Method + " " + redactedURL(req.URL)
	args := make([]any, 0, 8)
	if err != nil {
		args = append(args, "error", err)
	} else {
		args = append(args, "status", resp.StatusCode)
	}
	args = append(args, "duration", roundDuration(time.Since(start)))
	if req.ContentLength > 0 {
		args = append(args, "sent", req.ContentLength)
	}
	if err == nil && resp.ContentLength >= 0 && req.Method != http.MethodHead {
		args = append(args, "received", resp.ContentLength)
	}
	t.log.DebugContext(req.Context(), msg, args...)
	return resp, err
}

// redactedURL is u without user information, the values of query
// parameters whose names say secret (signature, token, credential, key,
// password, secret, auth: pre-signed blob URLs a registry redirects to carry
// such) replaced with REDACTED; the rest as sent.
func redactedURL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		params := strings.Split(c.RawQuery, "&")
		for i, p := range params {
			name, _, _ := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			if secretParam(name) {
				params[i] = p[:strings.IndexByte(p+"=", '=')] + "=REDACTED"
			}
		}
		c.RawQuery = strings.Join(params, "&")
	}
	return c.String()
}

// secretParam says whether a query parameter of this name may carry a
// secret.
func secretParam(name string) bool {
	name = strings.ToLower(name)
	for _, s := range []string{"sig", "token", "credential", "key", "password", "secret", "auth", "code"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// roundDuration rounds d for a person: to the millisecond from 10ms on, to
// 10µs below.
func roundDuration(d time.Duration) time.Duration {
	if d >= 10*time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Microsecond)
}
