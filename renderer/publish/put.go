package publish

import (
	"context"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/renderer/store"
)

// Put is the immutable-tag push, beside Publish's versioned one: it copies
// the graph of root (a manifest or an index, and all it names) from src
// into repo under tag, uploading only what repo does not have. The tag
// already bound to root changes nothing (Unchanged); bound to other
// content it is refused with ErrImmutable, also when another writer took
// it while the copy ran (the later writer wins a tag: Put reads it back).
func Put(ctx context.Context, src content.ReadOnlyStorage, root ocispec.Descriptor, repo store.Repository, tag string) (string, error) {
	desc, err := repo.Resolve(ctx, tag)
	switch {
	case err == nil && desc.Digest == root.Digest:
		return Unchanged, nil
	case err == nil:
		return "", fmt.Errorf("tag %s %w (%s, not %s)", tag, ErrImmutable, desc.Digest, root.Digest)
	case !store.IsNotFound(err):
		return "", fmt.Errorf("reading tag %s: %w", tag, store.Explain(err))
	}
	err = oras.CopyGraph(ctx, src, repo, root, oras.DefaultCopyGraphOptions)
	for try := 1; store.BlobUnknown(err) && try < 3; try++ {
		// Two writers uploaded one blob (a config the artifacts share) at
		// once and the registry lost it: copy again, which uploads what is
		// missing.
		err = oras.CopyGraph(ctx, src, repo, root, oras.DefaultCopyGraphOptions)
	}
	if err == nil {
		err = repo.Tag(ctx, root, tag)
	}
	if err != nil {
		return "", fmt.Errorf("pushing %s: %w", tag, store.Explain(err))
	}
	if desc, err = repo.Resolve(ctx, tag); err != nil {
		return "", store.Explain(err)
	}
	if desc.Digest != root.Digest {
		return "", fmt.Errorf("tag %s: another writer bound it to other content (%s) meanwhile: %w", tag, desc.Digest, ErrImmutable)
	}
	return Create, nil
}
