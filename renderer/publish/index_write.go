package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/internal/killpoint"
	"github.com/solar-pipeline/solar/renderer/sign"
)

// IndexOptions say how an index is written.
type IndexOptions struct {
	// Settle is how long after writing the index's tag is read back
	// (Options.Settle).
	Settle time.Duration
	// SigningKey, when set, signs the index (and an index it does not
	// verify is rewritten).
	SigningKey *sign.Key
	Log        *slog.Logger
}

// UpdateIndex applies change to namespace ns's index (an empty one where
// there is none, or where the one there is not usable) and writes the result
// back, unless it changed nothing (or left an index that was not there
// empty). An index that is there but not usable (ErrIndex: damaged, or not
// signed with opts.SigningKey) is replaced. A registry has no compare-and-swap: once
// Settle has passed the tag is read back, and where another writer replaced
// the index meanwhile, its index is read and changed again, so neither
// writer's change is lost. Where that writer's index is one this writer
// cannot use (another key's, in a rotation), it is left in place: two keys
// keep one index, the last written. change must give the same index when
// applied twice (Merge and Remove do).
func UpdateIndex(ctx context.Context, store Store, ns string, change func(*Index), opts IndexOptions) error {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	repo, err := store.Repository(ctx, IndexRepository(ns))
	if err != nil {
		return err
	}
	v, err := IndexVerifier(opts.SigningKey)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		cur, _, err := readIndex(ctx, store, ns, v)
		unusable := errors.Is(err, ErrIndex)
		if unusable && attempt > 1 {
			// Replaced since this writer's write by an index it cannot use:
			// another key's writer (a key rotation) at the same moment.
			// Each would replace the other's until one gave up: this one
			// leaves it, and its key's next run asks its repositories.
			opts.Log.Warn("another writer, with another key, replaced the namespace's index: it is left to it", "namespace", ns, "reason", err)
			return nil
		}
		if unusable {
			// Replaced, even by an empty one: it may name what this run
			// is about to change.
			opts.Log.Warn("writing the namespace's index anew", "namespace", ns, "reason", err)
		} else if err != nil {
			return err
		}
		next := &Index{Schema: indexSchema, Namespace: ns, Repositories: map[string]Entry{}}
		if cur != nil {
			next = cur.clone()
		}
		change(next)
		if cur != nil && next.equal(cur) || cur == nil && !unusable && len(next.Repositories) == 0 {
			return nil
		}
		desc, err := writeIndex(ctx, repo, next, opts.SigningKey)
		if err != nil {
			return fmt.Errorf("writing the index of %s: %w", ns, explain(err))
		}
		killpoint.Here("index-written")
		select {
		case <-time.After(opts.Settle):
		case <-ctx.Done():
			return ctx.Err()
		}
		got, err := repo.Resolve(ctx, IndexTag)
		if err != nil {
			return fmt.Errorf("confirming the index of %s: %w", ns, explain(err))
		}
		if got.Digest == desc.Digest {
			return nil
		}
		if attempt == maxAttempts {
			return fmt.Errorf("writing the index of %s: another writer replaced it %d times in a row; run again", ns, maxAttempts)
		}
		opts.Log.Warn("another writer replaced the namespace's index; merging again", "namespace", ns)
	}
}

// writeIndex pushes ix under IndexTag, replacing what the tag held.
func writeIndex(ctx context.Context, repo Repository, ix *Index, key *sign.Key) (ocispec.Descriptor, error) {
	b, err := encodeIndex(ix, key)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	art := &Artifact{ArtifactType: IndexArtifactType, Config: NewBlob(ocispec.MediaTypeEmptyJSON, []byte("{}")),
		Layers: []Blob{NewBlob(IndexMediaType, b)},
		// Fixed, or oras sets the time of the write: the same index, the
		// same manifest.
		Annotations: map[string]string{ocispec.AnnotationCreated: Created(time.Time{})}}
	staged, manifest, err := stage(ctx, art)
	if err != nil {
		return manifest, err
	}
	raw, err := upload(ctx, staged, repo, manifest, true)
	if err != nil {
		return manifest, err
	}
	return manifest, tagManifest(ctx, repo, manifest, raw, IndexTag)
}

// IndexEntries are the index entries of results that were written or
// checked against the store in this run (not those the index gave), by
// repository.
func IndexEntries(results []Result) map[string]Entry {
	out := map[string]Entry{}
	for _, r := range results {
		if r.Action == "" || r.indexed || r.Digest == "" {
			continue
		}
		out[r.Repository] = Entry{Version: r.Version, Digest: r.Digest, Size: r.manifest.Size, Layers: r.layers, Signature: r.Signature}
	}
	return out
}

// fromIndex is the result of job when the index's entry e holds what the
// job gives (its layers at e's version, and, where the run signs, the
// signature the run's key makes of that version): unchanged, without
// asking the store. ok is false otherwise, also where the job cannot be
// packed at e's version: the full way then says why, and signs.
func (p *publisher) fromIndex(job Job, key string) (r Result, ok bool) {
	e, found := p.opts.Index[job.Repository]
	if !found || (p.opts.SigningKey != nil && e.Signature == "") {
		return r, false
	}
	packed, _, err := p.layers(job, key, e.Version)
	if err != nil || !slices.Equal(packed, e.Layers) {
		return r, false
	}
	r = Result{Repository: job.Repository, Version: e.Version, Digest: e.Digest, Action: Unchanged, indexed: true, layers: packed,
		manifest: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(e.Digest), Size: e.Size}}
	if p.opts.SigningKey != nil {
		// Only this key's signature of this repository and version: one
		// of an older solar, which did not name them, is made anew.
		want, err := sign.SignatureDigest(r.subject(), p.opts.SigningKey)
		if err != nil || want.String() != e.Signature {
			return Result{}, false
		}
		r.Signature, r.SignatureAction = e.Signature, Unchanged
	}
	return r, true
}
