package pipeline

import (
	"context"
	"errors"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/reviewed"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// PushOptions say how Push pushes: DryRun, SigningKey (sign what is
// pushed) and Verifier (push nothing unless every version verifies).
type PushOptions struct {
	DryRun     bool
	SigningKey *sign.Key
	Verifier   *sign.Verifier
	// Reviewed, when set, must be what is pushed (Reviewed.Check): else
	// nothing is.
	Reviewed *reviewed.List
	// Progress, when set, is called after each repository is pushed.
	Progress func(done, total int)
}

// Push pushes the newest version of every repository of the layout src
// that the registry dst lacks, byte for byte (publish.PushLayout).
func Push(ctx context.Context, src, dst *Store, opts PushOptions) ([]publish.Result, error) {
	from := src.source()
	if from == nil || dst.Remote == nil {
		return nil, errors.New("push goes from a layout to a registry")
	}
	var check publish.Check
	if opts.Reviewed != nil {
		if err := opts.Reviewed.CheckRegistry(dst.Registry); err != nil {
			return nil, err
		}
		check = opts.Reviewed.Check(from, dst.Remote)
	}
	// The registry's indexes lose the entries of what is pushed: the next
	// publish asks those repositories the full way.
	ix := newIndexes(dst.Remote, Options{PublishOptions: PublishOptions{Settle: DefaultSettle, SigningKey: opts.SigningKey}})
	popts := publish.Options{DryRun: opts.DryRun, SigningKey: opts.SigningKey, Verifier: opts.Verifier,
		PushLast: chain.IsBootstrapRepository, Step: opts.Progress, BeforePush: ix.beforePush}
	return publish.PushLayout(ctx, from, dst.Remote, popts, check)
}

// source is what Push pushes from: the layout, or an archive unpacked
// (OpenArchive); nil for a registry.
func (s *Store) source() store.Source {
	if s.Layout != nil {
		return s.Layout
	}
	if src, ok := s.Store.(store.Source); ok && s.Remote == nil {
		return src
	}
	return nil
}
