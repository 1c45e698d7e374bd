package publish

import (
	"context"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// ImageSource is what PublishImage reads an image from: an OCI layout
// (oras-go's content/oci) that knows each manifest's referrers.
type ImageSource interface {
	oras.ReadOnlyTarget
	content.ReadOnlyGraphStorage
}

// PublishImage publishes a built image (root: an image index or manifest in
// src) into repository of dst at the version its content needs, as Publish
// does for a chart: the latest version when it resolves to root's digest
// (nothing is written), else the next patch version (0.0.1 in a repository
// without versions). The image's content is its digest: the same build, the
// same version. With it go the referrers src holds of each manifest root
// names (the SBOM of each platform), before the version is tagged, so that a
// version never lacks them. opts.SigningKey signs the version (its index), as
// a chart's version is signed: cosign verify --key accepts it. opts.DryRun
// decides the version and writes nothing. A version another writer takes
// meanwhile fails with ErrImmutable: run it again.
func PublishImage(ctx context.Context, src ImageSource, root ocispec.Descriptor, dst store.Store, repository string, opts Options) (Result, error) {
	r := Result{Repository: repository, Digest: root.Digest.String(), built: &built{manifest: root}}
	repo, err := dst.Repository(ctx, repository)
	if err != nil {
		return r, fmt.Errorf("opening %s: %w", repository, store.Explain(err))
	}
	latest, err := latestVersion(ctx, repo)
	if err != nil {
		return r, fmt.Errorf("listing the versions of %s: %w", repository, store.Explain(err))
	}
	r.Version, r.Action = "0.0.1", Create
	if latest != nil {
		desc, err := repo.Resolve(ctx, latest.Original())
		if err != nil {
			return r, fmt.Errorf("reading version %s of %s: %w", latest.Original(), repository, store.Explain(err))
		}
		r.Version, r.Action = latest.IncPatch().String(), Update
		if desc.Digest == root.Digest {
			r.Version, r.Action = latest.Original(), Unchanged
		}
	}
	if opts.DryRun {
		return r, nil
	}
	if r.Action != Unchanged {
		// The images first, their referrers next, the tag last.
		if err := oras.CopyGraph(ctx, src, repo, root, oras.DefaultCopyGraphOptions); err != nil {
			return r, fmt.Errorf("pushing %s: %w", repository, store.Explain(err))
		}
		if err := copyReferrers(ctx, src, root, repo); err != nil {
			return r, fmt.Errorf("pushing the referrers of %s: %w", repository, store.Explain(err))
		}
		if _, err := Put(ctx, src, root, repo, r.Version); err != nil {
			return r, fmt.Errorf("%s:%s: %w", repository, r.Version, err)
		}
	}
	if opts.SigningKey == nil {
		return r, nil
	}
	t, ok := repo.(sign.Target)
	if !ok {
		return r, fmt.Errorf("signing %s: the store keeps no signatures", repository)
	}
	desc, w, err := sign.Attach(ctx, t, r.subject(), opts.SigningKey)
	if err != nil {
		return r, fmt.Errorf("signing %s:%s: %w", repository, r.Version, store.Explain(err))
	}
	r.Signature, r.SignatureAction = desc.Digest.String(), Unchanged
	if w != nil {
		r.SignatureAction = Create
	}
	return r, store.Explain(sign.Confirm(ctx, []*sign.Written{w}))
}

// copyReferrers copies into repo every manifest of src that refers to root
// or to a manifest root names (an index's images), with what it names.
func copyReferrers(ctx context.Context, src ImageSource, root ocispec.Descriptor, repo store.Repository) error {
	nodes := []ocispec.Descriptor{root}
	children, err := content.Successors(ctx, src, root)
	if err != nil {
		return err
	}
	for _, c := range children {
		if c.MediaType == ocispec.MediaTypeImageManifest || c.MediaType == ocispec.MediaTypeImageIndex {
			nodes = append(nodes, c)
		}
	}
	for _, n := range nodes {
		preds, err := src.Predecessors(ctx, n)
		if err != nil {
			return err
		}
		for _, p := range preds {
			if p.Digest == root.Digest {
				continue // the index itself: Put copies it, and tags it
			}
			if err := oras.CopyGraph(ctx, src, repo, p, oras.DefaultCopyGraphOptions); err != nil {
				return err
			}
		}
	}
	return nil
}
