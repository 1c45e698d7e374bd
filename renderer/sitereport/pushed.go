package sitereport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/solar-pipeline/solar/renderer/store"
)

// Pushed is a tag of the site's registry and the digest of its manifest:
// what the site confirms it holds. Repository is HOST/PATH.
type Pushed struct {
	Repository string        `json:"repository"`
	Tag        string        `json:"tag"`
	Digest     digest.Digest `json:"digest"`
}

// RegistryLister is the site's registry as ListPushed reads it: its
// repositories under its prefix (the catalog API), and each one's tags.
// store.Remote is one.
type RegistryLister interface {
	Repositories(ctx context.Context, prefix string) ([]string, error)
	Repository(ctx context.Context, name string) (store.Repository, error)
}

// ListTimeout bounds the time ListPushed takes.
var ListTimeout = 10 * time.Minute

// ListPushed lists every tag of every repository of reg (the registry
// HOST[/PREFIX] named registry) with its manifest's digest, sorted: at most
// MaxPushed tags, in at most ListTimeout. A registry that does not serve
// the catalog API is an error naming it.
func ListPushed(ctx context.Context, reg RegistryLister, registryName string) ([]Pushed, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, ListTimeout,
		fmt.Errorf("listing the registry %s took longer than %s", registryName, ListTimeout))
	defer cancel()
	names, err := reg.Repositories(ctx, "")
	if err != nil {
		var resp *errcode.ErrorResponse
		if errors.As(err, &resp) && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed) {
			return nil, fmt.Errorf("the registry %s does not serve the catalog API (GET /v2/_catalog answered %d): export-reports --registry lists a registry's repositories with it", registryName, resp.StatusCode)
		}
		return nil, fmt.Errorf("listing the repositories of %s: %w", registryName, cmp.Or(context.Cause(ctx), err))
	}
	out := []Pushed{}
	for _, name := range names {
		repo, err := reg.Repository(ctx, name)
		if err != nil {
			return nil, err
		}
		full := path.Join(registryName, name)
		err = repo.Tags(ctx, "", func(tags []string) error {
			for _, tag := range tags {
				if len(out) == MaxPushed {
					return fmt.Errorf("the registry %s holds more than %d tags, the limit of a report archive", registryName, MaxPushed)
				}
				desc, err := repo.Resolve(ctx, tag)
				if err != nil {
					return fmt.Errorf("resolving %s:%s: %w", full, tag, err)
				}
				out = append(out, Pushed{Repository: full, Tag: tag, Digest: desc.Digest})
			}
			return nil
		})
		if err != nil {
			if c := context.Cause(ctx); c != nil {
				err = c
			}
			return nil, fmt.Errorf("listing the tags of %s: %w", full, err)
		}
	}
	sortPushed(out)
	return out, nil
}

func sortPushed(p []Pushed) {
	slices.SortFunc(p, func(a, b Pushed) int {
		return cmp.Or(strings.Compare(a.Repository, b.Repository), strings.Compare(a.Tag, b.Tag))
	})
}

// check names what is wrong with p, the n-th entry of the list of the
// registry reg (HOST[/PREFIX]).
func (p Pushed) check(n int, reg string) []string {
	var out []string
	host, repo, _ := strings.Cut(p.Repository, "/")
	ref := registry.Reference{Registry: host, Repository: repo, Reference: p.Tag}
	if err := ref.Validate(); err != nil || repo == "" || strings.HasPrefix(p.Tag, "sha256:") {
		out = append(out, fmt.Sprintf("pushed %d: %.300q:%.300q is not a repository HOST/PATH and a tag", n, p.Repository, p.Tag))
	} else if p.Repository != reg && !strings.HasPrefix(p.Repository, reg+"/") {
		out = append(out, fmt.Sprintf("pushed %d: %s is not under the registry %s the archive lists", n, p.Repository, reg))
	}
	if err := p.Digest.Validate(); err != nil {
		out = append(out, fmt.Sprintf("pushed %d (%s:%s): its digest %.200q: %v", n, p.Repository, p.Tag, p.Digest, err))
	}
	return out
}

// validRegistry says whether reg names a registry, HOST[:PORT][/PREFIX].
func validRegistry(reg string) bool {
	host, prefix, _ := strings.Cut(reg, "/")
	ref := registry.Reference{Registry: host, Repository: cmp.Or(prefix, "x")}
	return ref.Validate() == nil
}
