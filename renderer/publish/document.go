package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/internal/killpoint"
	"github.com/solar-pipeline/solar/internal/settle"
	"github.com/solar-pipeline/solar/renderer/store"
)

// maxDocument bounds a document's read.
const maxDocument = 16 << 20

// maxDocumentAttempts bounds the writes of one update that find the next
// version taken or replaced: writers that collide step aside for a random
// while and try again.
const maxDocumentAttempts = 10

// A document is a small JSON record kept in its own repository, each write
// a new version (0.0.N, rising): the newest version is the document. Its
// writes are a compare-and-set as far as a registry allows one, as the
// index's are: a version another writer took is not overwritten, and a
// write is confirmed after Settle before anyone acts on it.

// DocumentOptions say what a document is and how it is written.
type DocumentOptions struct {
	// ArtifactType and MediaType are its manifest's artifact type and its
	// one layer's media type (api's).
	ArtifactType, MediaType string
	// Settle is how long after a write its version is read back
	// (Options.Settle).
	Settle time.Duration
	Log    *slog.Logger
}

// ReadDocument reads the document in repository name: its body and
// version, nil and "" where there is none.
func ReadDocument(ctx context.Context, st store.Store, name string, opts DocumentOptions) ([]byte, string, error) {
	repo, err := st.Repository(ctx, name)
	if err != nil {
		return nil, "", err
	}
	for attempt := 1; ; attempt++ {
		body, version, err := readDocument(ctx, repo, name, opts)
		if !errors.Is(err, errTaken) || attempt == maxAttempts {
			return body, version, err
		}
	}
}

func readDocument(ctx context.Context, repo store.Repository, name string, opts DocumentOptions) ([]byte, string, error) {
	tags, err := store.Tags(ctx, repo)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", name, store.Explain(err))
	}
	newest := newestTag(tags)
	if newest == "" {
		return nil, "", nil
	}
	_, b, err := fetchManifest(ctx, repo, newest)
	if store.IsNotFound(err) {
		// Listed before its manifest is there: another writer's tag in the
		// making.
		return nil, newest, fmt.Errorf("reading %s:%s: %w", name, newest, errTaken)
	}
	if err != nil {
		return nil, newest, fmt.Errorf("reading %s:%s: %w", name, newest, store.Explain(err))
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.ArtifactType != opts.ArtifactType || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != opts.MediaType || m.Layers[0].Size > maxDocument {
		return nil, newest, fmt.Errorf("%s:%s is not a document of type %s", name, newest, opts.ArtifactType)
	}
	raw, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		return nil, newest, fmt.Errorf("reading %s:%s: %w", name, newest, store.Explain(err))
	}
	return raw, newest, nil
}

// UpdateDocument applies change to the document in repository name (nil
// where there is none) and writes what it gives as the next version, unless
// it gives the same bytes. Once Settle has passed the write is read back;
// where another writer took the version or wrote a newer one meanwhile,
// change is applied again to the newest document. It returns the document
// that holds: only then may a caller act on it. change must give its answer
// from its argument alone, and the same document applied to its own result
// (a change may be applied to a document that already holds it).
func UpdateDocument(ctx context.Context, st store.Store, name string, change func(cur []byte) ([]byte, error), opts DocumentOptions) ([]byte, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	repo, err := st.Repository(ctx, name)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			// Writers that collided step aside for a random while, so
			// that one of them goes first next time.
			select {
			case <-time.After(time.Duration(rand.Int64N(int64(attempt) * int64(50*time.Millisecond)))):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if attempt > maxDocumentAttempts {
			return nil, fmt.Errorf("writing %s: other writers took or replaced its next version %d times in a row; run again", name, maxDocumentAttempts)
		}
		body, version, manifest, err := updateDocumentOnce(ctx, repo, name, change, opts)
		if errors.Is(err, errTaken) {
			continue
		}
		if err != nil || version == "" {
			return body, err
		}
		killpoint.Here("document-written")
		if err := settle.Wait(ctx, opts.Settle); err != nil {
			return nil, err
		}
		held, err := holds(ctx, repo, version, manifest)
		if err != nil {
			return nil, fmt.Errorf("confirming %s: %w", name, store.Explain(err))
		}
		if held {
			return body, nil
		}
		opts.Log.Warn("another writer replaced the document; applying the change again", "repository", name)
	}
}

// updateDocumentOnce applies change to the newest document and writes the
// result as the next version: the body and, where it wrote one, its version
// and manifest; errTaken where another writer took that version first.
func updateDocumentOnce(ctx context.Context, repo store.Repository, name string, change func([]byte) ([]byte, error), opts DocumentOptions) ([]byte, string, ocispec.Descriptor, error) {
	cur, newest, err := readDocument(ctx, repo, name, opts)
	if err != nil {
		return nil, "", ocispec.Descriptor{}, err
	}
	next, err := change(cur)
	if err != nil || bytes.Equal(next, cur) {
		return cur, "", ocispec.Descriptor{}, err
	}
	version, err := nextVersion(name, newest)
	if err != nil {
		return nil, "", ocispec.Descriptor{}, err
	}
	art := &Artifact{ArtifactType: opts.ArtifactType, Config: NewBlob(ocispec.MediaTypeEmptyJSON, []byte("{}")),
		Layers:      []Blob{NewBlob(opts.MediaType, next)},
		Annotations: map[string]string{ocispec.AnnotationCreated: Created(time.Time{})}}
	staged, manifest, err := stage(ctx, art)
	if err == nil {
		err = push(ctx, staged, repo, manifest, version, true)
	}
	if err != nil && !errors.Is(err, errTaken) {
		err = fmt.Errorf("writing %s: %w", name, store.Explain(err))
	}
	return next, version, manifest, err
}

// holds says whether version is still the repository's newest and holds
// manifest.
func holds(ctx context.Context, repo store.Repository, version string, manifest ocispec.Descriptor) (bool, error) {
	tags, err := store.Tags(ctx, repo)
	if err != nil {
		return false, err
	}
	if newestTag(tags) != version {
		return false, nil
	}
	got, err := repo.Resolve(ctx, version)
	if err != nil {
		return false, err
	}
	return got.Digest == manifest.Digest, nil
}
