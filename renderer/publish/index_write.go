package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/killpoint"
	"github.com/solar-pipeline/solar/internal/settle"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
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
// back as the next version, unless it changed nothing (or left an index that
// was not there empty). An index that is there but not usable (ErrIndex:
// damaged, replayed, or not signed with opts.SigningKey) is replaced. A
// registry has no compare-and-swap: once Settle has passed, the index's
// versions are read back, and where another writer took the version or
// wrote a newer one meanwhile, the newest index is read and changed again,
// so neither writer's change is lost. Where that writer's index is one this
// writer cannot use (another key's, in a rotation), it is left in place: two
// keys keep one index, the last written. change must give the same index when
// applied twice (Merge and Remove do).
func UpdateIndex(ctx context.Context, st store.Store, ns string, change func(*Index), opts IndexOptions) error {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	repo, err := st.Repository(ctx, IndexRepository(ns))
	if err != nil {
		return err
	}
	// The index names what the namespace's repositories hold: a layout
	// saves it after them.
	if last, ok := repo.(store.LastSaver); ok {
		last.SaveLast()
	}
	v, err := IndexVerifier(opts.SigningKey)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		written, err := updateOnce(ctx, st, repo, ns, v, change, opts, attempt > 1)
		if errors.Is(err, errTaken) && attempt < maxAttempts {
			continue // another writer took the version: read its index
		}
		if err != nil || written == nil {
			return err
		}
		killpoint.Here("index-written")
		if err := settle.Wait(ctx, opts.Settle); err != nil {
			return err
		}
		held, err := holds(ctx, repo, written.Version, written.manifest)
		if err != nil {
			return fmt.Errorf("confirming the index of %s: %w", ns, store.Explain(err))
		}
		if held {
			return nil
		}
		if attempt == maxAttempts {
			return fmt.Errorf("writing the index of %s: another writer replaced it %d times in a row; run again", ns, maxAttempts)
		}
		opts.Log.Warn("another writer replaced the namespace's index; merging again", "namespace", ns)
	}
}

// updateOnce reads ns's index, applies change and writes the result as the
// next version: nil where there was nothing to write (or, again after a
// write of its own, where another key's writer's index is there); errTaken
// where another writer took that version first.
func updateOnce(ctx context.Context, st store.Store, repo store.Repository, ns string, v *sign.Verifier, change func(*Index), opts IndexOptions, again bool) (*Index, error) {
	cur, newest, err := readIndex(ctx, st, ns, v)
	unusable := errors.Is(err, ErrIndex)
	if unusable && again {
		// Replaced since this writer's write by an index it cannot use:
		// another key's writer (a key rotation) at the same moment. Each
		// would replace the other's until one gave up: this one leaves it,
		// and its key's next run asks its repositories.
		opts.Log.Warn("another writer, with another key, replaced the namespace's index: it is left to it", "namespace", ns, "reason", err)
		return nil, nil
	}
	if unusable {
		// Replaced, even by an empty one: it may name what this run is
		// about to change.
		opts.Log.Warn("writing the namespace's index anew", "namespace", ns, "reason", err)
	} else if err != nil {
		return nil, err
	}
	next := &Index{Schema: indexSchema, Namespace: ns, Repositories: map[string]Entry{}}
	if cur != nil {
		next = cur.clone()
	}
	change(next)
	if cur != nil && next.equal(cur) || cur == nil && !unusable && len(next.Repositories) == 0 {
		return nil, nil
	}
	if next.Version, err = nextVersion(IndexRepository(ns), newest); err != nil {
		return nil, err
	}
	if next.manifest, err = writeIndex(ctx, repo, next, opts.SigningKey); err != nil {
		return nil, fmt.Errorf("writing the index of %s: %w", ns, store.Explain(err))
	}
	return next, nil
}

// nextVersion is the version of repository name after newest (0.0.1 after
// none).
func nextVersion(name, newest string) (string, error) {
	if newest == "" {
		return "0.0.1", nil
	}
	v, err := semver.StrictNewVersion(newest)
	if err != nil {
		return "", err
	}
	next := v.IncPatch()
	if !next.GreaterThan(v) {
		return "", fmt.Errorf("writing %s: its version %s has no next: delete that tag", name, newest)
	}
	return next.Original(), nil
}

// writeIndex pushes ix under its version, which must be free (errTaken),
// and moves IndexTag to it.
func writeIndex(ctx context.Context, repo store.Repository, ix *Index, key *sign.Key) (ocispec.Descriptor, error) {
	b, err := encodeIndex(ix, key)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	art := &Artifact{ArtifactType: api.ArtifactTypeIndex, Config: NewBlob(ocispec.MediaTypeEmptyJSON, []byte("{}")),
		Layers: []Blob{NewBlob(api.MediaTypeIndex, b)},
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
	if _, err := repo.Resolve(ctx, ix.Version); err == nil {
		return manifest, errTaken
	} else if !store.IsNotFound(err) {
		return manifest, err
	}
	if err := tagManifest(ctx, repo, manifest, raw, ix.Version); err != nil {
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
		out[r.Repository] = Entry{Version: r.Version, Digest: r.Digest, Size: r.manifest().Size, Layers: r.layers(), Signature: r.Signature}
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
	r = Result{Repository: job.Repository, Version: e.Version, Digest: e.Digest, Action: Unchanged, indexed: true,
		built: &built{manifest: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(e.Digest), Size: e.Size}, layers: packed}}
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
