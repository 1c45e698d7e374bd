package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/solar-pipeline/solar/internal/capool"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
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
	homes        *blobHomes
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
		homes:     &blobHomes{},
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
	return remoteRepo{Repository: repo, probe: r.referrers, homes: r.homes}, nil
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

// remoteRepo is a registry's repository: its blobs are its own, and one
// another repository has is mounted from there (blobHomes).
type remoteRepo struct {
	*remote.Repository
	probe *referrersProbe
	homes *blobHomes
}

func (remoteRepo) BlobsPerRepository() bool { return true }
