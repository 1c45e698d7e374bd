package rolloutstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/store"
)

// ErrNoRollout: the store holds no state of the Rollout (no publish has
// run it).
var ErrNoRollout = errors.New("no state of the Rollout in the store: no publish has run it yet")

// Doc is a Rollout's state as the store keeps it.
type Doc struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	rollout.State
	// From is, per member, its bootstrap version before the revision (""
	// for none): what a rollback publishes again.
	From map[string]string `json:"from"`
	// Keys are, per member, the key of the content the revision gives it
	// (publish.Job.Key): a failed rollout holds until that content changes.
	Keys map[string]string `json:"keys,omitempty"`
	// Decision is what the last pass decided, and At when a pass last
	// changed the state (a pass that changes nothing writes nothing).
	Decision rollout.Decision `json:"decision"`
	At       time.Time        `json:"at"`
}

// Options say how a state is written.
type Options struct {
	// Settle is publish.DocumentOptions'.
	Settle time.Duration
	Log    *slog.Logger
	// DryRun computes the new state without writing it.
	DryRun bool
}

func documentOptions(opts Options) publish.DocumentOptions {
	return publish.DocumentOptions{ArtifactType: api.ArtifactTypeRollout, MediaType: api.MediaTypeRollout, Settle: opts.Settle, Log: opts.Log}
}

// Read reads the state of Rollout ns/name: nil where there is none.
func Read(ctx context.Context, st store.Store, ns, name string) (*Doc, error) {
	raw, _, err := publish.ReadDocument(ctx, st, chain.RolloutRepository(ns, name), documentOptions(Options{}))
	if err != nil {
		return nil, err
	}
	return decode(raw)
}

// Update applies change to the state of Rollout ns/name (nil where there is
// none) and writes the result, unless it is the same; it returns the state
// that holds. change must give the same state applied to its own result.
func Update(ctx context.Context, st store.Store, ns, name string, change func(*Doc) (*Doc, error), opts Options) (*Doc, error) {
	apply := func(raw []byte) ([]byte, error) {
		doc, err := decode(raw)
		if err != nil {
			return nil, err
		}
		next, err := change(doc)
		if err != nil || next == nil {
			return raw, err
		}
		next.Namespace, next.Name = ns, name
		return json.Marshal(next)
	}
	repo := chain.RolloutRepository(ns, name)
	if opts.DryRun {
		raw, _, err := publish.ReadDocument(ctx, st, repo, documentOptions(opts))
		if err == nil {
			raw, err = apply(raw)
		}
		if err != nil {
			return nil, err
		}
		return decode(raw)
	}
	raw, err := publish.UpdateDocument(ctx, st, repo, apply, documentOptions(opts))
	if err != nil {
		return nil, err
	}
	return decode(raw)
}

// The operator's verbs.
const (
	Pause   = "pause"
	Resume  = "resume"
	Approve = "approve"
	Abort   = "abort"
	Undo    = "undo"
)

// Act applies an operator's verb to the state of Rollout ns/name; Approve
// approves wave (the one waiting when ""). The next pass (solar publish, the
// controller) acts on it.
func Act(ctx context.Context, st store.Store, ns, name, verb, wave string, opts Options) (*Doc, error) {
	return Update(ctx, st, ns, name, func(doc *Doc) (*Doc, error) {
		if doc == nil {
			return nil, fmt.Errorf("Rollout %s/%s: %w", ns, name, ErrNoRollout)
		}
		switch verb {
		case Pause:
			doc.Paused = true
		case Resume:
			doc.Paused = false
		case Abort:
			doc.Aborted = true
		case Undo:
			doc.Undo = true
		case Approve:
			w, err := doc.waiting(wave)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(doc.Approved, w) {
				doc.Approved = append(doc.Approved, w)
			}
		default:
			return nil, fmt.Errorf("unknown verb %q", verb)
		}
		return doc, nil
	}, opts)
}

// waiting is the wave to approve: wave when given (one of the rollout's),
// else the last wave that passed.
func (doc *Doc) waiting(wave string) (string, error) {
	var last string
	for _, ws := range doc.Waves {
		if wave != "" && ws.Name == wave {
			return wave, nil
		}
		if ws.PassedAt != nil {
			last = ws.Name
		}
	}
	switch {
	case wave != "":
		return "", fmt.Errorf("Rollout %s/%s has no wave %q", doc.Namespace, doc.Name, wave)
	case last == "":
		return "", fmt.Errorf("Rollout %s/%s: no wave has passed yet: nothing waits for an approval", doc.Namespace, doc.Name)
	}
	return last, nil
}

// ReadVersion reads version of a rollout state's repository (gc marks from
// every version it keeps).
func ReadVersion(ctx context.Context, repo store.Repository, version string) (*Doc, error) {
	desc, err := repo.Resolve(ctx, version)
	if err != nil {
		return nil, err
	}
	if desc.Size > maxManifest {
		return nil, fmt.Errorf("version %s: a manifest of %d bytes is not a rollout's state", version, desc.Size)
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.ArtifactType != api.ArtifactTypeRollout || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != api.MediaTypeRollout || m.Layers[0].Size > maxState {
		return nil, fmt.Errorf("version %s is not a rollout's state", version)
	}
	raw, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		return nil, err
	}
	return decode(raw)
}

// maxState and maxManifest bound a state's read.
const (
	maxState    = 16 << 20
	maxManifest = 4 << 20
)

// Refs are the bootstrap chart versions doc names: what a rollback of its
// members publishes again, which gc keeps.
func (doc *Doc) Refs() []store.Ref {
	var refs []store.Ref
	for _, name := range slices.Sorted(maps.Keys(doc.From)) {
		if v := doc.From[name]; v != "" {
			refs = append(refs, store.Ref{Repository: chain.BootstrapRepository(doc.Namespace, name), Version: v})
		}
	}
	return refs
}

// decode decodes a state document (nil for none).
func decode(raw []byte) (*Doc, error) {
	if raw == nil {
		return nil, nil
	}
	var doc Doc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not a rollout's state: %w", err)
	}
	return &doc, nil
}
