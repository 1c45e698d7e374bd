package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
)

// repairer is a repository whose blobs a run reads back cheaply and can
// write again: a layout's (Options.Repair).
type repairer interface {
	// Repair writes blob d again, from data, where the repository's copy
	// is missing or is not what d says (dryRun: only says so); bad says
	// whether it was.
	Repair(ctx context.Context, d ocispec.Descriptor, data []byte, dryRun bool) (bad bool, _ error)
}

// repair reads back every blob of version (its manifest desc) of job's
// repository in a local store, and writes again, from the job packed at
// that version (art, packed here when nil), each one missing or damaged:
// what verify finds and a run that trusts the store keeps. same: the job
// packs to that very manifest (written again too, where it was bad), so the
// version holds the job's content even where its manifest could not be
// read.
func (p *publisher) repair(ctx context.Context, repo Repository, job Job, version string, desc ocispec.Descriptor, art *Artifact) (same bool, _ error) {
	rp, local := repo.(repairer)
	if !local {
		return false, nil
	}
	var err error
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
	var blobs []ocispec.Descriptor
	for _, b := range append([]Blob{art.Config}, art.Layers...) {
		supply[b.Desc.Digest] = b.Data
		blobs = append(blobs, b.Desc)
	}
	if same = manifest.Digest == desc.Digest; same {
		if supply[desc.Digest], err = content.FetchAll(ctx, staged, manifest); err != nil {
			return false, err
		}
		blobs = append([]ocispec.Descriptor{desc}, blobs...)
	} else {
		// Packed otherwise (by an older solar, say): what its manifest
		// names, where this run packs the same.
		m, err := readManifest(ctx, repo, desc)
		if err != nil {
			return false, nil // the caller says why
		}
		blobs = append([]ocispec.Descriptor{m.Config}, m.Layers...)
	}
	for _, d := range blobs {
		if err := p.repairBlob(ctx, rp, job, version, d, supply[d.Digest]); err != nil {
			return false, err
		}
	}
	return same, nil
}

// repairBlob writes blob d of job's version again from data where it is
// missing or damaged, and says so; nil data: not what this run packs
// (verify names it).
func (p *publisher) repairBlob(ctx context.Context, rp repairer, job Job, version string, d ocispec.Descriptor, data []byte) error {
	if data == nil {
		return nil
	}
	bad, err := rp.Repair(ctx, d, data, p.opts.DryRun)
	if err != nil {
		return fmt.Errorf("writing blob %s of %s:%s again: %w", d.Digest, job.Repository, version, err)
	}
	if bad {
		msg := "a damaged or missing blob written again"
		if p.opts.DryRun {
			msg = "a blob is damaged or missing: a run without --dry-run writes it again"
		}
		p.opts.Log.Warn(msg, "repository", job.Repository, "version", version, "blob", d.Digest)
	}
	return nil
}

// Repair writes blob d again, from data, where the layout's copy is
// missing or not what d says (dryRun: only says so); bad says whether it
// was.
func (r *layoutRepo) Repair(ctx context.Context, d ocispec.Descriptor, data []byte, dryRun bool) (bad bool, _ error) {
	rc, err := r.s.backend.Fetch(ctx, d)
	switch {
	case err == nil:
		vr := content.NewVerifyReader(rc, d)
		_, err = io.Copy(io.Discard, vr)
		if err == nil {
			err = vr.Verify()
		}
		rc.Close()
		if err == nil {
			return false, nil
		}
	case !errors.Is(err, errdef.ErrNotFound) && !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if dryRun {
		return true, nil
	}
	if digest.FromBytes(data) != d.Digest || int64(len(data)) != d.Size {
		return true, fmt.Errorf("the content given is not blob %s", d.Digest)
	}
	if err := r.write(ctx); err != nil {
		return true, err
	}
	dir := filepath.Join(r.s.dir, "blobs", d.Digest.Algorithm().String())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return true, err
	}
	// Renamed over the bad copy (a symlink there is replaced, not followed).
	return true, writeAtomic(filepath.Join(dir, d.Digest.Encoded()), data)
}
