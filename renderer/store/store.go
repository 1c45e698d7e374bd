package store

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
// publish does not ask whether each blob of a repository's first version is
// there when the repository's blobs are its own.
type BlobScoper interface {
	BlobsPerRepository() bool
}

// Lister is a Store that lists its repositories under a prefix ("alpha/"):
// what finds the orphans a deleted Target leaves.
type Lister interface {
	Repositories(ctx context.Context, prefix string) ([]string, error)
}

// LastSaver is a repository that can be told it names what the store's
// other repositories hold, as publish's namespace indexes do: a Layout saves
// it after them, so that a kill or a power loss while saving never leaves it
// naming what they do not hold yet (Layout.Save). A registry has nothing to
// save and is not one.
type LastSaver interface {
	SaveLast()
}

// Source is what publish.PushLayout pushes from: a Layout, or an archive unpacked
// (renderer/archive), whose repositories it lists.
type Source interface {
	Store
	Lister
}

// Tags lists every tag of a repository. A repository the registry does not
// know has none: a registry lists a repository in its catalog once a blob is
// uploaded to it, and answers 404 for its tags until a manifest is tagged (a
// run killed after its first upload leaves one).
func Tags(ctx context.Context, repo Repository) ([]string, error) {
	var tags []string
	err := repo.Tags(ctx, "", func(t []string) error { tags = append(tags, t...); return nil })
	if err != nil && !IsNotFound(err) {
		return nil, err
	}
	return tags, nil
}

// What each store and repository implements, checked by the compiler: the
// optional interfaces are found by type assertion where they are used.
var (
	_ Source       = (*Layout)(nil)
	_ Store        = (*Remote)(nil)
	_ Lister       = (*Remote)(nil)
	_ Store        = (*overlay)(nil)
	_ sign.Target  = (*layoutRepo)(nil)
	_ sign.Target  = remoteRepo{}
	_ sign.Target  = (*overlayRepo)(nil)
	_ BlobScoper   = remoteRepo{}
	_ ReferrersAPI = remoteRepo{}
	_ LastSaver    = (*layoutRepo)(nil)
	_ LastSaver    = (*overlayRepo)(nil)
	_ Repairer     = (*layoutRepo)(nil)
)
