package store

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
)

// referrersProbe remembers whether a registry serves the referrers API. oras
// asks it anew for every repository client, with one request more per
// chart whose signatures are read; solar opens a client per use, so it asks
// once per registry and tells each client.
type referrersProbe struct {
	once sync.Once
	// known and capable are set by the one probe; unknown after a failed
	// probe, each client then asks for itself.
	known, capable bool
}

// Referrers lists the referrers of desc, the registry's capability known.
func (r remoteRepo) Referrers(ctx context.Context, desc ocispec.Descriptor, artifactType string, fn func([]ocispec.Descriptor) error) error {
	r.probe.learn(ctx, r.Repository, desc)
	if r.probe.known {
		_ = r.SetReferrersCapability(r.probe.capable) // already set: the same answer
	}
	return r.Repository.Referrers(ctx, desc, artifactType, fn)
}

// learn asks the registry once, as the distribution spec lets a client
// tell: a registry with the referrers API answers 200 (an index, empty
// when nothing refers to desc), one without it 404.
func (p *referrersProbe) learn(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor) {
	p.once.Do(func() {
		scheme := "https"
		if repo.PlainHTTP {
			scheme = "http"
		}
		url := fmt.Sprintf("%s://%s/v2/%s/referrers/%s", scheme, repo.Reference.Host(), repo.Reference.Repository, desc.Digest)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", ocispec.MediaTypeImageIndex)
		resp, err := repo.Client.Do(req)
		if err != nil {
			return
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			p.known, p.capable = true, true
		case http.StatusNotFound:
			p.known = true
		}
	})
}

// ReferrersAPI is a repository whose registry may keep the referrers of
// its manifests itself (the OCI 1.1 referrers API).
type ReferrersAPI interface {
	// KeepsReferrers says, after this client pushed a referrer of
	// subject, whether the registry serves the referrers API (asked once
	// per registry) and took the referrers this client pushed so (it
	// answered each with OCI-Subject, and oras-go wrote no referrers
	// index): then no other writer's index can lose them.
	KeepsReferrers(ctx context.Context, subject ocispec.Descriptor) bool
}

// KeepsReferrers: see ReferrersAPI. A client that pushed a referrer
// without the registry's OCI-Subject has its capability set to false
// (oras-go then wrote the index), which SetReferrersCapability(true)
// refuses.
func (r remoteRepo) KeepsReferrers(ctx context.Context, subject ocispec.Descriptor) bool {
	r.probe.learn(ctx, r.Repository, subject)
	return r.probe.known && r.probe.capable && r.SetReferrersCapability(true) == nil
}
