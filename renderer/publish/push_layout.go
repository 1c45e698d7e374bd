package publish

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"oras.land/oras-go/v2"
)

// ErrMoved: the registry changed since the layout was rendered against it.
var ErrMoved = fmt.Errorf("the registry moved since the layout was rendered")

// PushLayout pushes the newest version of every repository of the layout
// that the registry lacks, exactly the bytes the layout holds (what was
// reviewed): release charts first, bootstrap charts last. The layout's version
// must be the one after the registry's latest, as it was when the layout was
// rendered against the registry; if any repository moved since, nothing is
// pushed (ErrMoved).
func PushLayout(ctx context.Context, l *Layout, dst Store, opts Options) ([]Result, error) {
	type push struct {
		repo, version string
	}
	var todo []push
	var results []Result
	repos, err := l.Repositories(ctx, "")
	if err != nil {
		return nil, err
	}
	// Bootstrap charts name release charts: they go last.
	slices.SortStableFunc(repos, func(a, b string) int {
		return compareBool(strings.Contains(a, "/bootstrap-"), strings.Contains(b, "/bootstrap-"))
	})
	for _, repo := range repos {
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
			return nil, fmt.Errorf("listing the versions of %s: %w", repo, explain(err))
		}
		r := Result{Repository: repo, Version: mine.Original()}
		desc, err := src.Resolve(ctx, mine.Original())
		if err != nil {
			return nil, err
		}
		r.Digest = desc.Digest.String()
		switch {
		case theirs != nil && theirs.Equal(mine):
			got, err := target.Resolve(ctx, mine.Original())
			if err != nil {
				return nil, fmt.Errorf("reading %s:%s: %w", repo, mine, explain(err))
			}
			if got.Digest != desc.Digest {
				return nil, fmt.Errorf("%w: %s:%s holds other content; render again", ErrMoved, repo, mine)
			}
			r.Action = Unchanged
		case theirs == nil && mine.Original() == "0.0.1":
			r.Action = Create
			todo = append(todo, push{repo, mine.Original()})
		case theirs != nil && theirs.IncPatch().String() == mine.String():
			r.Action = Update
			todo = append(todo, push{repo, mine.Original()})
		default:
			have := "none"
			if theirs != nil {
				have = theirs.Original()
			}
			return nil, fmt.Errorf("%w: %s is at %s, the layout was rendered for %s; render again", ErrMoved, repo, have, mine)
		}
		results = append(results, r)
	}
	if opts.DryRun {
		return results, nil
	}
	for _, p := range todo {
		src, _ := l.Repository(ctx, p.repo)
		target, err := dst.Repository(ctx, p.repo)
		if err != nil {
			return results, err
		}
		if _, err := oras.Copy(ctx, src, p.version, target, p.version, oras.DefaultCopyOptions); err != nil {
			return results, fmt.Errorf("pushing %s:%s: %w", p.repo, p.version, explain(err))
		}
	}
	return results, nil
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
