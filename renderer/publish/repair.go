package publish

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/renderer/store"
)

// repair reads back every blob of version (its manifest desc) of job's
// repository in a local store, and writes each one missing or damaged again
// from the job packed at that version (art, packed here when nil and only
// then): what verify finds and a run that trusts the store keeps. A dry run
// says so. same: the manifest was bad and the job packs to that very one
// (written again), so the version holds the job's content.
func (p *publisher) repair(ctx context.Context, repo store.Repository, job Job, version string, desc ocispec.Descriptor, art *Artifact) (same bool, _ error) {
	rp, local := repo.(store.Repairer)
	if !local {
		return false, nil
	}
	bad, err := damagedBlobs(ctx, rp, repo, desc)
	if err != nil || len(bad) == 0 {
		return false, err
	}
	if art == nil {
		if art, err = job.Pack(version); err != nil {
			return false, err
		}
	}
	staged, manifest, err := stage(ctx, art)
	if err != nil {
		return false, fail("packing", job, err)
	}
	supply := map[digest.Digest][]byte{}
	for _, b := range append([]Blob{art.Config}, art.Layers...) {
		supply[b.Desc.Digest] = b.Data
	}
	if bad[0].Digest == desc.Digest { // the manifest: what it names is unknown
		if same = manifest.Digest == desc.Digest; !same {
			return false, nil // packed otherwise: the caller says why it cannot be read
		}
		if supply[desc.Digest], err = content.FetchAll(ctx, staged, manifest); err != nil {
			return false, err
		}
		for _, b := range append([]Blob{art.Config}, art.Layers...) {
			if damaged, err := rp.Damaged(ctx, b.Desc); err != nil || damaged {
				bad = append(bad, b.Desc)
			}
		}
	}
	for _, d := range bad {
		if err := p.repairBlob(ctx, rp, job, version, d, supply[d.Digest]); err != nil {
			return false, err
		}
	}
	return same, nil
}

// damagedBlobs are the blobs of the manifest desc that are missing or
// damaged: the manifest alone where it is, else its config and layers.
func damagedBlobs(ctx context.Context, rp store.Repairer, repo store.Repository, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	if bad, err := rp.Damaged(ctx, desc); err != nil || bad {
		return []ocispec.Descriptor{desc}, err
	}
	m, err := store.ReadManifest(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	var out []ocispec.Descriptor
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		bad, err := rp.Damaged(ctx, d)
		if err != nil {
			return nil, err
		}
		if bad {
			out = append(out, d)
		}
	}
	return out, nil
}

// repairBlob writes blob d of job's version again from data, and says so;
// nil data: not what this run packs, left as it is.
func (p *publisher) repairBlob(ctx context.Context, rp store.Repairer, job Job, version string, d ocispec.Descriptor, data []byte) error {
	if data == nil {
		p.opts.Log.Warn("a blob is damaged or missing, and not what this run packs: left as it is", "repository", job.Repository, "version", version, "blob", d.Digest)
		return nil
	}
	if p.opts.DryRun {
		p.opts.Log.Warn("a blob is damaged or missing: a run without --dry-run writes it again", "repository", job.Repository, "version", version, "blob", d.Digest)
		return nil
	}
	if err := rp.Rewrite(ctx, d, data); err != nil {
		return fmt.Errorf("writing blob %s of %s:%s again: %w", d.Digest, job.Repository, version, err)
	}
	p.opts.Log.Warn("a damaged or missing blob written again", "repository", job.Repository, "version", version, "blob", d.Digest)
	return nil
}
