package updater

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// ClientOptions configure the download's HTTP client (NewClient).
type ClientOptions struct {
	// RootCAs are the certificates trusted; nil: the system's.
	RootCAs *x509.CertPool
	// Credentials are sent to their own hosts only.
	Credentials Credentials
	// DialTimeout, TLSHandshakeTimeout and ResponseHeaderTimeout bound the
	// steps of a request before its body (default 30 s each).
	DialTimeout, TLSHandshakeTimeout, ResponseHeaderTimeout time.Duration
}

// maxRedirects: a registry redirects a blob to its storage (S3, a CDN), which
// may redirect once more; more is a loop.
const maxRedirects = 5

// NewClient is the artifact download's HTTP client: TLS 1.2 or later, no
// proxy from the environment (the download goes to the attempt's URL and
// nowhere else), no keep-alive (no connection outlives a download), bounded
// dial, handshake and response header waits, redirects to https only and at
// most maxRedirects of them, and credentials (Basic, or a bearer token
// obtained with them) sent only to the host they are configured for.
func NewClient(o ClientOptions) *http.Client {
	or := func(d time.Duration) time.Duration {
		if d <= 0 {
			return 30 * time.Second
		}
		return d
	}
	base := &http.Transport{
		DialContext:            (&net.Dialer{Timeout: or(o.DialTimeout), KeepAlive: -1}).DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs},
		TLSHandshakeTimeout:    or(o.TLSHandshakeTimeout),
		ResponseHeaderTimeout:  or(o.ResponseHeaderTimeout),
		MaxResponseHeaderBytes: 64 << 10,
		DisableKeepAlives:      true,
	}
	return &http.Client{Transport: &authTransport{base: base, creds: o.Credentials}, CheckRedirect: checkRedirect}
}

// checkURL is the one check of every URL the download requests: the
// attempt's, every redirect's, a token realm's. Only https, and no user
// information in it (credentials come from the credentials file only).
func checkURL(u *url.URL) error {
	if u.Scheme != "https" {
		return fmt.Errorf("%s is not https: refused", redactURL(u))
	}
	if u.User != nil {
		return fmt.Errorf("%s carries a user name or password: refused", redactURL(u))
	}
	return nil
}

// checkRedirect allows https redirects, to any host (registries send blobs
// from their storage's host), at most maxRedirects. The request the client
// builds for a redirect carries no Authorization: the transport adds one
// for the request's own host only.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if err := checkURL(req.URL); err != nil {
		return fmt.Errorf("a redirect to %w", err)
	}
	return nil
}

// redactURL is a URL fit for a log or an outcome: no user information and no
// query (a storage redirect's query is a presigned signature).
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// redactError takes the query and user information out of the URL a
// client error names.
func redactError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			ue.URL = redactURL(u)
		} else {
			ue.URL = "(an unreadable URL)"
		}
	}
	return err
}

// authTransport adds the login of the request's own host, and nothing to a
// request for another host: an Authorization header the request brings
// (the client copies headers into a redirect's request) is dropped.
type authTransport struct {
	base  http.RoundTripper
	creds Credentials
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkURL(req.URL); err != nil {
		return nil, err
	}
	l, ok := t.creds.lookup(req.URL.Host)
	r := req.Clone(req.Context())
	r.Header.Del("Authorization")
	if ok {
		r.SetBasicAuth(l.username, l.password)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	return t.withToken(req, resp)
}
