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

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

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
// per chart.
type Fetcher struct {
	// Wrap, when set, wraps the HTTP transport (solar --debug logs each
	// request).
	Wrap func(http.RoundTripper) http.RoundTripper
	mu   sync.Mutex
	seen map[string]fetched
	down map[string]error // by registry host
}

type fetched struct {
	archive []byte
	err     error
}

// Fetch reads the chart archive a ref points at.
func (f *Fetcher) Fetch(ctx context.Context, ref Ref) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.seen[ref.String()]; ok {
		return r.archive, r.err
	}
	host, _, _ := strings.Cut(strings.TrimPrefix(ref.URL, "oci://"), "/")
	if err := f.down[host]; err != nil {
		return nil, err
	}
	archive, err := f.fetch(ctx, ref)
	if f.seen == nil {
		f.seen, f.down = map[string]fetched{}, map[string]error{}
	}
	f.seen[ref.String()] = fetched{archive, err}
	var netErr net.Error
	if errors.As(err, &netErr) && ctx.Err() == nil {
		f.down[host] = err
	}
	return archive, err
}

func (f *Fetcher) fetch(ctx context.Context, ref Ref) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	name, ok := strings.CutPrefix(ref.URL, "oci://")
	if !ok {
		return nil, fmt.Errorf("not an oci:// URL")
	}
	repo, err := remote.NewRepository(name)
	if err != nil {
		return nil, err
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
	archive, err := publish.ChartArchive(ctx, repo, reference)
	if err == nil && archive == nil {
		err = fmt.Errorf("no Helm chart layer (%s) in %s", publish.ChartLayerMediaType, ref)
	}
	return archive, err
}
