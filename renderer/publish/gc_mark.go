package publish

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
	held []Held
}

// planGC lists the versions of the repositories names of store and marks
// from every version kept: a version that a kept one names (opts.Refs) stays,
// whatever its age, and so does what it names in turn. A version whose
// references cannot be read stops the collection before anything is removed:
// what it names is unknown, so nothing it might name can go.
func planGC(ctx context.Context, store Store, names []string, opts GCOptions) (*gcPlan, error) {
	p := &gcPlan{tags: map[string][]string{}, drop: map[string][]string{}}
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
		if IsIndexRepository(name) {
			if p.drop[name], err = oldIndexes(ctx, repo, tags); err != nil {
				return nil, fmt.Errorf("collecting %s: %w", name, explain(err))
			}
			continue // names nothing
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
		if IsIndexRepository(name) {
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

// oldIndexes are the versions of a namespace index's repository that go:
// all but the newest, which is the index, less those whose manifest the
// newest or IndexTag (what older solar versions read) names: a registry
// deletes a manifest with all its tags. A reader that listed a version just
// removed finds it gone and leaves the index aside: its run goes the full
// way.
func oldIndexes(ctx context.Context, repo Repository, tags []string) ([]string, error) {
	drop := old(tags, 1)
	if len(drop) == 0 {
		return nil, nil
	}
	pinned := map[string]bool{}
	for _, tag := range []string{newestTag(tags), IndexTag} {
		desc, err := repo.Resolve(ctx, tag)
		if err != nil && !(tag == IndexTag && isNotFound(err)) {
			return nil, err
		}
		pinned[desc.Digest.String()] = err == nil
	}
	var out []string
	for _, v := range drop {
		desc, err := repo.Resolve(ctx, v)
		if err != nil {
			return nil, err
		}
		if !pinned[desc.Digest.String()] {
			out = append(out, v)
		}
	}
	return out, nil
}
