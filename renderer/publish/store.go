package publish

import (
	"context"

	"github.com/solar-pipeline/solar/renderer/sign"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry"
)

// Repository is one OCI repository: an oras.Target that lists its tags.
type Repository interface {
	oras.Target
	registry.TagLister
}

// Store opens repositories by name, such as "alpha/bootstrap-edge-1".
type Store interface {
	Repository(ctx context.Context, name string) (Repository, error)
}

// BlobScoper is a Repository that says whether its blobs are its own (a
// registry's) or shared with the store's other repositories (a layout's).
// Publish does not ask whether each blob of a repository's first version is
// there when the repository's blobs are its own.
type BlobScoper interface {
	BlobsPerRepository() bool
}

// Lister is a Store that lists its repositories under a prefix ("alpha/"):
// what finds the orphans a deleted Target leaves.
type Lister interface {
	Repositories(ctx context.Context, prefix string) ([]string, error)
}

// Source is what PushLayout pushes from: a Layout, or an archive unpacked
// (renderer/archive), whose repositories it lists.
type Source interface {
	Store
	Lister
}

// What each store and repository implements, checked by the compiler: the
// optional interfaces are found by type assertion where they are used.
var (
	_ Source      = (*Layout)(nil)
	_ Store       = (*Remote)(nil)
	_ Lister      = (*Remote)(nil)
	_ Store       = (*overlay)(nil)
	_ sign.Target = (*layoutRepo)(nil)
	_ sign.Target = remoteRepo{}
	_ sign.Target = (*overlayRepo)(nil)
	_ BlobScoper  = remoteRepo{}
)
