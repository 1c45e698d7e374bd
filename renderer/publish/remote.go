package publish

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

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
}

// Remote is a registry reached over HTTP(S) with oras-go: credentials from
// the options or from the docker config (DOCKER_CONFIG, credsStore,
// credHelpers), retries with backoff on 429, 5xx and connection errors.
type Remote struct {
	host, prefix string
	client       *auth.Client
	plainHTTP    bool
}

// NewRemote prepares the client; it does not contact the registry.
func NewRemote(opts RemoteOptions) (*Remote, error) {
	host, prefix := opts.Host, opts.Prefix
	// InsecureSkipVerify only when the user asks for it, for development.
	tlsConfig := &tls.Config{InsecureSkipVerify: opts.InsecureSkipTLSVerify}
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", opts.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tlsConfig
	transport := retry.NewTransport(base)
	transport.Policy = func() retry.Policy { return retryPolicy }

	var cred auth.CredentialFunc
	if opts.Username != "" || opts.Password != "" {
		cred = auth.StaticCredential(host, auth.Credential{Username: opts.Username, Password: opts.Password})
	} else {
		store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading the docker config: %w", err)
		}
		cred = credentials.Credential(store)
	}
	return &Remote{
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

// retryPolicy is oras-go's, which also retries a refused connection: a
// registry restarting behind a load balancer refuses for a moment.
var retryPolicy = &retry.GenericPolicy{
	Retryable: func(resp *http.Response, err error) (bool, error) {
		if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
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
	if r.prefix != "" {
		name = r.prefix + "/" + name
	}
	repo, err := remote.NewRepository(r.host + "/" + name)
	if err != nil {
		return nil, err
	}
	repo.Client = r.client
	repo.PlainHTTP = r.plainHTTP
	return remoteRepo{repo}, nil
}

// remoteRepo is a registry's repository: its blobs are its own.
type remoteRepo struct{ *remote.Repository }

func (remoteRepo) BlobsPerRepository() bool { return true }

// What goes wrong with a registry, as errors.Is finds it in a publish error;
// the CLI says which flag helps.
var (
	ErrDenied      = errors.New("the registry denied access")
	ErrUntrusted   = errors.New("the registry's TLS certificate is not trusted")
	ErrPlainHTTP   = errors.New("the registry speaks plain HTTP")
	ErrUnreachable = errors.New("the registry cannot be reached")
)

// explain marks the errors users meet with one of the errors above.
func explain(err error) error {
	var resp *errcode.ErrorResponse
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var opErr *net.OpError
	switch {
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		return fmt.Errorf("%w (%d %s): %w", ErrDenied, resp.StatusCode, http.StatusText(resp.StatusCode), err)
	case errors.As(err, &unknownCA), errors.As(err, &hostname):
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("%w: %w", ErrPlainHTTP, err)
	case errors.As(err, &opErr):
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return err
}
