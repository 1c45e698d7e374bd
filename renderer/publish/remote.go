package publish

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/solar-pipeline/solar/internal/capool"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// RemoteOptions say how to reach and log in to a registry.
type RemoteOptions struct {
	// Host is HOST[:PORT]; repositories are Prefix/<name> (Prefix may be
	// empty).
	Host, Prefix string
	// Username and Password, when set, are used instead of the docker config.
	Username string
	Password string
	// CAFile is a PEM file of certificates to trust besides the system's.
	CAFile                string
	PlainHTTP             bool
	InsecureSkipTLSVerify bool
	// Wrap, when set, wraps the HTTP transport, under the retries: every
	// request sent passes it (the controller counts them).
	Wrap func(http.RoundTripper) http.RoundTripper
}

// Remote is a registry reached over HTTP(S) with oras-go: credentials from
// the options or from the docker config (DOCKER_CONFIG, credsStore,
// credHelpers), else helm's registry config (loginStore), retries with backoff on 429, 5xx and connection errors.
type Remote struct {
	host, prefix string
	client       *auth.Client
	plainHTTP    bool
	referrers    *referrersProbe
}

// NewRemote prepares the client; it does not contact the registry.
func NewRemote(opts RemoteOptions) (*Remote, error) {
	host, prefix := opts.Host, opts.Prefix
	// InsecureSkipVerify only when the user asks for it, for development.
	tlsConfig := &tls.Config{InsecureSkipVerify: opts.InsecureSkipTLSVerify}
	if opts.CAFile != "" {
		pool, err := capool.WithFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("the CA file: %w", err)
		}
		tlsConfig.RootCAs = pool
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tlsConfig
	var inner http.RoundTripper = base
	if opts.Wrap != nil {
		inner = opts.Wrap(base)
	}
	transport := retry.NewTransport(inner)
	transport.Policy = func() retry.Policy { return retryPolicy }

	var cred auth.CredentialFunc
	if opts.Username != "" || opts.Password != "" {
		cred = auth.StaticCredential(host, auth.Credential{Username: opts.Username, Password: opts.Password})
	} else {
		store, err := loginStore()
		if err != nil {
			return nil, err
		}
		cred = credentials.Credential(store)
	}
	return &Remote{
		referrers: &referrersProbe{},
		host:      host,
		prefix:    prefix,
		plainHTTP: opts.PlainHTTP,
		client: &auth.Client{
			Client:     &http.Client{Transport: transport},
			Cache:      auth.NewCache(),
			Credential: cred,
		},
	}, nil
}

// retryPolicy is oras-go's (5xx, 429 honouring Retry-After, 408, timeouts),
// which also retries a refused connection (a registry restarting behind a
// load balancer refuses for a moment) and a connection reset or closed before
// the response (a proxy or load balancer dropping it), also while the request
// body is still being written (the transport then reports its own end of the
// connection closed: net.ErrClosed). Every request solar
// makes may be sent twice: reads, a new upload session, and writes of
// content-addressed blobs and manifests.
var retryPolicy = &retry.GenericPolicy{
	Retryable: func(resp *http.Response, err error) (bool, error) {
		if err != nil && (errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
			errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)) {
			return true, nil
		}
		return retry.DefaultPredicate(resp, err)
	},
	Backoff:  retry.DefaultBackoff,
	MinWait:  retry.DefaultPolicy.(*retry.GenericPolicy).MinWait,
	MaxWait:  retry.DefaultPolicy.(*retry.GenericPolicy).MaxWait,
	MaxRetry: retry.DefaultPolicy.(*retry.GenericPolicy).MaxRetry,
}

// Repository returns the repository PREFIX/name of the registry.
func (r *Remote) Repository(_ context.Context, name string) (Repository, error) {
	repo, err := r.repository(name)
	if err != nil {
		return nil, err
	}
	return remoteRepo{Repository: repo, probe: r.referrers}, nil
}

func (r *Remote) repository(name string) (*remote.Repository, error) {
	if r.prefix != "" {
		name = r.prefix + "/" + name
	}
	repo, err := remote.NewRepository(r.host + "/" + name)
	if err != nil {
		return nil, err
	}
	repo.Client = r.client
	repo.PlainHTTP = r.plainHTTP
	// A signature added to a registry without the referrers API replaces
	// the referrers index under the tag sha256-<hex>: the old one stays
	// (a delete would need delete rights, and another writer may be
	// reading it).
	repo.SkipReferrersGC = true
	return repo, nil
}

// remoteRepo is a registry's repository: its blobs are its own.
type remoteRepo struct {
	*remote.Repository
	probe *referrersProbe
}

func (remoteRepo) BlobsPerRepository() bool { return true }

// Explain is explain for the registry errors of callers outside this package
// (the fleet's pushes and reads).
func Explain(err error) error { return explain(err) }

// explain marks the errors users meet with one of the errors above, in a
// sentence: what was asked, what the registry answered.
func explain(err error) error {
	var already *registryError
	if err == nil || errors.As(err, &already) {
		return err
	}
	var resp *errcode.ErrorResponse
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var opErr *net.OpError
	switch {
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return &registryError{kind: ErrDenied, msg: "no credentials for it: none given and none in the docker config or helm's registry config (solar registry login HOST -u USER --password-stdin writes one)", err: err}
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		return &registryError{kind: ErrDenied, msg: answer(resp), err: err}
	case errors.As(err, &unknownCA), errors.As(err, &hostname):
		return &registryError{kind: ErrUntrusted, msg: err.Error(), err: err}
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return &registryError{kind: ErrPlainHTTP, msg: err.Error(), err: err}
	case errors.As(err, &opErr):
		return &registryError{kind: ErrUnreachable, msg: err.Error(), err: err}
	case errors.As(err, &resp):
		return &registryError{kind: errors.New("the registry answered with an error"), msg: answer(resp), err: err}
	}
	return err
}

// answer says what a registry answered to which request, without the raw
// error details oras-go prints ([map[Action:pull ...]]).
func answer(resp *errcode.ErrorResponse) string {
	var msgs []string
	for _, e := range resp.Errors {
		if e.Message != "" {
			msgs = append(msgs, e.Message)
		}
	}
	s := fmt.Sprintf("%d %s to %s %s", resp.StatusCode, http.StatusText(resp.StatusCode), resp.Method, resp.URL)
	if len(msgs) > 0 {
		s += ": " + strings.Join(msgs, "; ")
	}
	return s
}

// registryError is a registry failure in a sentence; errors.Is finds both its
// kind and the error it explains.
type registryError struct {
	kind error
	msg  string
	err  error
}

func (e *registryError) Error() string   { return e.kind.Error() + ": " + e.msg }
func (e *registryError) Unwrap() []error { return []error{e.kind, e.err} }
