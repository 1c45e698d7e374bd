package publish

import (
	"context"
	"slices"

	"github.com/Masterminds/semver/v3"

	"github.com/solar-pipeline/solar/renderer/store"
)

// GCIndexes is the rule a garbage collection keeps the namespace indexes by
// (store.GCOptions.Own): for an index's repository, own is true and drop are
// the versions that go: all but the newest, which is the index, less those
// whose manifest the newest or IndexTag (what older solar versions read)
// names: a registry deletes a manifest with all its tags. A reader that
// listed a version just removed finds it gone and leaves the index aside: its
// run goes the full way. Other repositories keep store.GCOptions.Keep.
func GCIndexes(ctx context.Context, repo store.Repository, name string, tags []string) (drop []string, own bool, _ error) {
	if !IsIndexRepository(name) {
		return nil, false, nil
	}
	older := olderVersions(tags)
	if len(older) == 0 {
		return nil, true, nil
	}
	pinned := map[string]bool{}
	for _, tag := range []string{newestTag(tags), IndexTag} {
		desc, err := repo.Resolve(ctx, tag)
		if err != nil && !(tag == IndexTag && store.IsNotFound(err)) {
			return nil, true, err
		}
		pinned[desc.Digest.String()] = err == nil
	}
	for _, v := range older {
		desc, err := repo.Resolve(ctx, v)
		if err != nil {
			return nil, true, err
		}
		if !pinned[desc.Digest.String()] {
			drop = append(drop, v)
		}
	}
	return drop, true, nil
}

// olderVersions are the versions among tags but the newest, oldest first.
func olderVersions(tags []string) []string {
	var versions []*semver.Version
	for _, t := range tags {
		if v, err := semver.StrictNewVersion(t); err == nil {
			versions = append(versions, v)
		}
	}
	slices.SortFunc(versions, func(a, b *semver.Version) int { return a.Compare(b) })
	var out []string
	for _, v := range versions[:max(len(versions)-1, 0)] {
		out = append(out, v.Original())
	}
	return out
}
