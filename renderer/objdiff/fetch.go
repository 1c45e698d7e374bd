package objdiff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/solar-pipeline/solar/renderer/publish"
)

// Limits of reading an application chart from its registry.
const (
	// FetchTimeout bounds reading one chart, every request included.
	FetchTimeout = 30 * time.Second
	// maxManifest and maxChart bound what is read.
	maxManifest = 4 << 20
	maxChart    = 32 << 20
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
	desc, rc, err := repo.FetchReference(ctx, reference)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if desc.Size > maxManifest {
		return nil, fmt.Errorf("a manifest of %d bytes, more than %d", desc.Size, maxManifest)
	}
	b, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decoding the manifest: %w", err)
	}
	for _, l := range m.Layers {
		if l.MediaType != publish.ChartLayerMediaType {
			continue
		}
		if l.Size > maxChart {
			return nil, fmt.Errorf("a chart of %d bytes, more than %d", l.Size, maxChart)
		}
		return content.FetchAll(ctx, repo.Blobs(), l)
	}
	return nil, fmt.Errorf("no Helm chart layer (%s) in %s", publish.ChartLayerMediaType, ref)
}
