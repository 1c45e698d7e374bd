package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Ref is a version of a repository that another version names: a bootstrap
// chart names the release chart versions Flux installs from it.
type Ref struct {
	Repository string
	Version    string
}

func (r Ref) String() string { return r.Repository + ":" + r.Version }

// Held is an old version a garbage collection keeps because a kept version
// names it.
type Held struct {
	// Version is "repository:version".
	Version string `json:"version"`
	// By are the kept versions ("repository:version") that name it.
	By []string `json:"by"`
}

// gcPlan is what a collection removes from each repository, after the mark:
// the versions beyond the newest opts.Keep, less those a kept version names.
type gcPlan struct {
	tags map[string][]string // every version of each repository
	drop map[string][]string // what goes, oldest first
	own  map[string]bool     // the repositories GCOptions.Own rules
	held []Held
}

// planGC lists the versions of the repositories names of store and marks
// from every version kept: a version that a kept one names (opts.Refs) stays,
// whatever its age, and so does what it names in turn. A version whose
// references cannot be read stops the collection before anything is removed:
// what it names is unknown, so nothing it might name can go.
func planGC(ctx context.Context, store Store, names []string, opts GCOptions) (*gcPlan, error) {
	p := &gcPlan{tags: map[string][]string{}, drop: map[string][]string{}, own: map[string]bool{}}
	repos := map[string]Repository{}
	dropping := false
	for _, name := range names {
		repo, err := store.Repository(ctx, name)
		if err != nil {
			return nil, err
		}
		tags, err := Tags(ctx, repo)
		if err != nil {
			return nil, fmt.Errorf("listing the versions of %s: %w", name, explain(err))
		}
		repos[name], p.tags[name] = repo, tags
		if opts.Own != nil {
			drop, own, err := opts.Own(ctx, repo, name, tags)
			if err != nil {
				return nil, fmt.Errorf("collecting %s: %w", name, explain(err))
			}
			if own {
				p.drop[name], p.own[name] = drop, true
				continue // names nothing
			}
		}
		p.drop[name] = old(tags, opts.Keep)
		dropping = dropping || len(p.drop[name]) > 0
	}
	if opts.Refs == nil || !dropping {
		return p, nil
	}
	// The mark: a worklist of kept versions whose references are unread.
	var work []Ref
	for _, name := range names {
		if p.own[name] {
			continue
		}
		for _, tag := range p.tags[name] {
			if !slices.Contains(p.drop[name], tag) {
				work = append(work, Ref{name, tag})
			}
		}
	}
	by := map[Ref][]string{}
	var order []Ref
	for len(work) > 0 {
		kept := work[len(work)-1]
		work = work[:len(work)-1]
		refs, err := opts.Refs(ctx, repos[kept.Repository], kept.Repository, kept.Version)
		if err != nil {
			return nil, fmt.Errorf("reading what %s names: %w; nothing removed", kept, err)
		}
		for _, ref := range refs {
			i := slices.Index(p.drop[ref.Repository], ref.Version)
			if _, marked := by[ref]; !marked && i < 0 {
				continue // kept anyway, or not in the store
			}
			if i >= 0 {
				p.drop[ref.Repository] = slices.Delete(p.drop[ref.Repository], i, i+1)
				order = append(order, ref)
				work = append(work, ref)
			}
			by[ref] = append(by[ref], kept.String())
		}
	}
	for _, ref := range order {
		names := by[ref]
		slices.Sort(names)
		p.held = append(p.held, Held{Version: ref.String(), By: names})
	}
	slices.SortFunc(p.held, func(a, b Held) int { return strings.Compare(a.Version, b.Version) })
	return p, nil
}
