package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/solar-pipeline/solar/internal/parallel"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// verifyIndexes checks each namespace index of names against the chart
// repositories' tags (tagsOf): every entry must name a repository there, its
// newest version, that version's manifest and its layers. A publish trusts such an
// entry without asking the repository: an entry that no longer holds (a
// repository deleted, re-created or written by hand, a version pushed by a
// writer that keeps no index) is a violation, which publish --full repairs.
// Indexes says how many were checked.
func (v *Result) verifyIndexes(ctx context.Context, store store.Store, names []string, tagsOf map[string][]string, opts Options) error {
	found := make([][]Violation, len(names))
	err := parallel.Each(ctx, len(names), opts.Concurrency, func(ctx context.Context, i int) error {
		var err error
		found[i], err = verifyIndex(ctx, store, names[i], tagsOf)
		return err
	})
	if err != nil {
		return err
	}
	for _, f := range found {
		v.Violations = append(v.Violations, f...)
	}
	v.Indexes = len(names)
	return nil
}

// verifyIndex checks one namespace index (the repository name).
func verifyIndex(ctx context.Context, st store.Store, name string, tagsOf map[string][]string) ([]Violation, error) {
	ns := chain.Namespace(name)
	// Not its signature: a cluster never pulls an index, and the publish
	// that trusts one checks it with its own key.
	ix, err := publish.ReadIndex(ctx, st, ns, nil)
	if errors.Is(err, publish.ErrIndex) {
		return []Violation{{name, publish.IndexTag, err.Error()}}, nil
	}
	if err != nil || ix == nil {
		return nil, err
	}
	var out []Violation
	bad := func(repo, format string, a ...any) {
		out = append(out, Violation{name, ix.Version, repo + ": " + fmt.Sprintf(format, a...) + " (publish --full rewrites the entry)"})
	}
	for _, repo := range slices.Sorted(maps.Keys(ix.Repositories)) {
		e := ix.Repositories[repo]
		tags, ok := tagsOf[repo]
		if !ok {
			bad(repo, "the index names %s, but the store has no such repository", e.Version)
			continue
		}
		if newest := newestVersion(tags); newest != e.Version {
			bad(repo, "the index names %s, but the newest version is %s", e.Version, newest)
			continue
		}
		r, err := st.Repository(ctx, repo)
		if err != nil {
			return nil, err
		}
		desc, layers, err := publish.ManifestLayers(ctx, r, e.Version)
		switch {
		case err != nil:
			// The repository's own check says what is wrong with it.
			bad(repo, "the index names %s, which cannot be read: %v", e.Version, store.Explain(err))
		case desc.Digest.String() != e.Digest:
			bad(repo, "the index names %s as %s, but the store holds %s", e.Version, e.Digest, desc.Digest)
		case !slices.Equal(layers, e.Layers):
			bad(repo, "the index names other layers for %s than its manifest", e.Version)
		}
	}
	return out, nil
}

// newestVersion is the highest plain version of tags ("" for none).
func newestVersion(tags []string) string {
	newest := ""
	for _, t := range tags {
		if plainVersion.MatchString(t) && (newest == "" || semverLess(newest, t)) {
			newest = t
		}
	}
	return newest
}
