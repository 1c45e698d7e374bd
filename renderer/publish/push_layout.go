package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Check sees what PushLayout would do, every result with its action, before
// anything is pushed: an error from it pushes nothing.
type Check func(ctx context.Context, results []Result) error

// PushLayout pushes the newest version of every repository of the layout
// (or of an unpacked archive: any store.Source) that the registry lacks, exactly the bytes the layout holds (what was
// reviewed): opts.PushLast's repositories (bootstrap charts) after the
// others (release charts). The layout's version
// must be the one after the registry's latest, as it was when the layout was
// rendered against the registry; if any repository moved since, nothing is
// pushed (ErrMoved). check, when not nil, then sees the results first: its
// error, too, pushes nothing.
func PushLayout(ctx context.Context, l store.Source, dst store.Store, opts Options, check Check) ([]Result, error) {
	results, err := planPush(ctx, l, dst, opts.PushLast)
	if err != nil {
		return nil, err
	}
	if opts.Verifier != nil {
		if err := verifyLayout(ctx, l, results, opts.Verifier); err != nil {
			return nil, err
		}
	}
	if check != nil {
		if err := check(ctx, results); err != nil {
			return nil, err
		}
	}
	if opts.DryRun {
		return results, nil
	}
	if err := beforePush(ctx, results, opts); err != nil {
		return results, err
	}
	var carried []*sign.Written
	for i, r := range results {
		src, err := l.Repository(ctx, r.Repository)
		if err != nil {
			return results, err
		}
		target, err := dst.Repository(ctx, r.Repository)
		if err != nil {
			return results, err
		}
		if r.Action != Unchanged {
			// The tag was free when planned: another writer who took it
			// since, with other content, fails the push (ErrImmutable).
			if _, err := Put(ctx, src, r.manifest(), target, r.Version); err != nil {
				return results, fmt.Errorf("%s:%s: %w", r.Repository, r.Version, err)
			}
		}
		if opts.Step != nil {
			opts.Step(i+1, len(results))
		}
		// The version's signatures, which the registry may lack even for
		// a version it has (signed in the layout after it was pushed).
		st, ok := target.(sign.Target)
		if !ok {
			continue
		}
		ws, err := sign.Carry(ctx, src.(sign.Target), st, r.subject(), opts.Verifier)
		if err != nil {
			return results, fmt.Errorf("pushing the signatures of %s:%s: %w", r.Repository, r.Version, store.Explain(err))
		}
		if opts.SigningKey != nil {
			_, w, err := sign.Attach(ctx, st, r.subject(), opts.SigningKey)
			if err != nil {
				return results, fmt.Errorf("signing %s:%s: %w", r.Repository, r.Version, store.Explain(err))
			}
			if w != nil {
				ws = append(ws, w)
			}
		}
		carried = append(carried, toConfirm(ctx, st, ws...)...)
	}
	return results, store.Explain(sign.Confirm(ctx, carried))
}

// verifyLayout checks the signature of every version results name in l,
// all before any push, and names every version that fails.
func verifyLayout(ctx context.Context, l store.Source, results []Result, v *sign.Verifier) error {
	var bad []string
	for _, r := range results {
		src, err := l.Repository(ctx, r.Repository)
		if err != nil {
			return err
		}
		if err := v.Check(ctx, src.(sign.Target), r.subject()); err != nil {
			if !errors.Is(err, sign.ErrUnsigned) && !errors.Is(err, sign.ErrBadSignature) {
				return err
			}
			bad = append(bad, fmt.Sprintf("%s:%s: %v", r.Repository, r.Version, err))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w; nothing pushed:\n  %s", ErrSignature, strings.Join(bad, "\n  "))
	}
	return nil
}

// planPush is what PushLayout would do with each repository of the layout,
// those of last after the others, or ErrMoved.
func planPush(ctx context.Context, l store.Source, dst store.Store, last func(string) bool) ([]Result, error) {
	repos, err := l.Repositories(ctx, "")
	if err != nil {
		return nil, err
	}
	if last != nil {
		slices.SortStableFunc(repos, func(a, b string) int { return compareBool(last(a), last(b)) })
	}
	var results []Result
	for _, repo := range repos {
		if IsIndexRepository(repo) {
			continue // the layout's, not the registry's
		}
		src, err := l.Repository(ctx, repo)
		if err != nil {
			return nil, err
		}
		mine, err := latestVersion(ctx, src)
		if err != nil {
			return nil, err
		}
		if mine == nil {
			continue // a repository without versions
		}
		target, err := dst.Repository(ctx, repo)
		if err != nil {
			return nil, err
		}
		theirs, err := latestVersion(ctx, target)
		if err != nil {
			return nil, fmt.Errorf("listing the versions of %s: %w", repo, store.Explain(err))
		}
		r := Result{Repository: repo, Version: mine.Original()}
		desc, err := src.Resolve(ctx, mine.Original())
		if err != nil {
			return nil, err
		}
		r.Digest, r.built = desc.Digest.String(), &built{manifest: desc}
		switch {
		case theirs != nil && theirs.Equal(mine):
			got, err := target.Resolve(ctx, mine.Original())
			if err != nil {
				return nil, fmt.Errorf("reading %s:%s: %w", repo, mine, store.Explain(err))
			}
			if got.Digest != desc.Digest {
				return nil, fmt.Errorf("%w: %s:%s holds other content; render again", ErrMoved, repo, mine)
			}
			r.Action = Unchanged
		case theirs == nil && mine.Original() == "0.0.1":
			r.Action = Create
		case theirs != nil && theirs.IncPatch().String() == mine.String():
			r.Action = Update
		default:
			have := "none"
			if theirs != nil {
				have = theirs.Original()
			}
			return nil, fmt.Errorf("%w: %s is at %s, the layout was rendered for %s; render again", ErrMoved, repo, have, mine)
		}
		results = append(results, r)
	}
	return results, nil
}

// Version reads a version of a repository in a store: its manifest digest
// and its layers. A version the store lacks is ErrNoVersion.
func Version(ctx context.Context, s store.Store, repository, version string) (string, []Blob, error) {
	repo, err := s.Repository(ctx, repository)
	if err != nil {
		return "", nil, err
	}
	desc, err := repo.Resolve(ctx, version)
	if store.IsNotFound(err) {
		return "", nil, fmt.Errorf("%s:%s: %w", repository, version, ErrNoVersion)
	}
	if err != nil {
		return "", nil, fmt.Errorf("reading %s:%s: %w", repository, version, store.Explain(err))
	}
	layers, err := fetchLayers(ctx, repo, desc)
	if err != nil {
		return "", nil, fmt.Errorf("reading %s:%s: %w", repository, version, store.Explain(err))
	}
	return desc.Digest.String(), layers, nil
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// beforePush gives opts.BeforePush the repositories results push: their
// versions change without the indexes knowing their layers.
func beforePush(ctx context.Context, results []Result, opts Options) error {
	var repos []string
	for _, r := range results {
		if r.Action != Unchanged {
			repos = append(repos, r.Repository)
		}
	}
	if opts.BeforePush == nil || len(repos) == 0 {
		return nil
	}
	return opts.BeforePush(ctx, repos)
}
