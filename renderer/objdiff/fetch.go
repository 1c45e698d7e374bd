package objdiff

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// Limits of reading an application chart from its registry.
const (
	// FetchTimeout bounds reading one chart, every request included.
	FetchTimeout = 30 * time.Second
)

// Fetcher reads application charts from their registries, anonymously (as
// an OCIRepository without secretRef does), each ref once; a registry that
// cannot be reached (no connection, no TLS) is asked once per diff, not once
// per chart. A registry is asked one chart at a time; a chart read before,
// or one of another registry, waits for no read in progress.
type Fetcher struct {
	// Wrap, when set, wraps the HTTP transport (solar --debug logs each
	// request).
	Wrap  func(http.RoundTripper) http.RoundTripper
	mu    sync.Mutex // guards the maps, never held while reading
	seen  map[string]*fetched
	down  map[string]error       // by registry host
	hosts map[string]*sync.Mutex // by registry host: one read at a time
}

// fetched is a ref's read: done is closed when archive and err are set.
type fetched struct {
	done    chan struct{}
	archive []byte
	digest  string
	err     error
}

// Digest is the manifest digest of the chart ref points at, when Fetch
// read it; "" when it did not (not asked, or it failed).
func (f *Fetcher) Digest(ref Ref) string {
	f.mu.Lock()
	r, ok := f.seen[ref.String()]
	f.mu.Unlock()
	if !ok {
		return ""
	}
	select {
	case <-r.done:
	default:
		return ""
	}
	if r.err != nil {
		return ""
	}
	return r.digest
}

// resolving is a repository that keeps the descriptor it last resolved: the
// manifest's digest, known without asking twice.
type resolving struct {
	*remote.Repository
	desc ocispec.Descriptor
}

func (r *resolving) Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error) {
	desc, err := r.Repository.Resolve(ctx, reference)
	r.desc = desc
	return desc, err
}

// Fetch reads the chart archive a ref points at.
func (f *Fetcher) Fetch(ctx context.Context, ref Ref) ([]byte, error) {
	host, _, _ := strings.Cut(strings.TrimPrefix(ref.URL, "oci://"), "/")
	f.mu.Lock()
	if f.seen == nil {
		f.seen, f.down, f.hosts = map[string]*fetched{}, map[string]error{}, map[string]*sync.Mutex{}
	}
	r, ok := f.seen[ref.String()]
	if !ok {
		r = &fetched{done: make(chan struct{})}
		f.seen[ref.String()] = r
		if f.hosts[host] == nil {
			f.hosts[host] = &sync.Mutex{}
		}
	}
	hostMu := f.hosts[host]
	f.mu.Unlock()
	if ok {
		select {
		case <-r.done:
			return r.archive, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer close(r.done)
	hostMu.Lock()
	defer hostMu.Unlock()
	f.mu.Lock()
	r.err = f.down[host]
	f.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	r.archive, r.digest, r.err = f.fetch(ctx, ref)
	var netErr net.Error
	if errors.As(r.err, &netErr) && ctx.Err() == nil {
		f.mu.Lock()
		f.down[host] = r.err
		f.mu.Unlock()
	}
	return r.archive, r.err
}

// fetch reads the chart archive ref points at, and its manifest's digest.
func (f *Fetcher) fetch(ctx context.Context, ref Ref) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	name, ok := strings.CutPrefix(ref.URL, "oci://")
	if !ok {
		return nil, "", fmt.Errorf("not an oci:// URL")
	}
	repo, err := remote.NewRepository(name)
	if err != nil {
		return nil, "", err
	}
	transport := http.DefaultTransport
	if f.Wrap != nil {
		transport = f.Wrap(transport)
	}
	repo.Client = &auth.Client{Client: &http.Client{Timeout: FetchTimeout, Transport: transport}, Cache: auth.NewCache()}
	repo.PlainHTTP = ref.Insecure
	reference := ref.Tag
	if ref.Digest != "" {
		reference = ref.Digest
	}
	target := &resolving{Repository: repo}
	archive, err := publish.ChartArchive(ctx, target, reference)
	if err == nil && archive == nil {
		err = fmt.Errorf("no Helm chart layer (%s) in %s", api.MediaTypeHelmChart, ref)
	}
	return archive, target.desc.Digest.String(), err
}
