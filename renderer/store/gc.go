package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/solar-pipeline/solar/api"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// GCOptions say what a garbage collection keeps.
type GCOptions struct {
	// Keep is how many of the newest versions of each repository stay; at
	// least 1 (Flux follows the newest).
	Keep int
	// Prefix limits the collection to repositories under it ("alpha/").
	Prefix string
	// DryRun says what would go, removing nothing.
	DryRun bool
	// Select, when set, says which repositories are collected; the others
	// are left as they are (GCResult.Skipped). The collection reads every
	// version as a single-manifest chart: an index (the fleet's agent
	// binaries) would lose its platforms' manifests and blobs.
	Select func(repository string) bool
	// Refs, when set, reads the versions of other repositories that a kept
	// version names (a bootstrap chart names its release charts): those
	// stay, whatever their age (GCResult.Held). Without it every repository
	// is collected on its own.
	Refs func(ctx context.Context, repo Repository, name, version string) ([]Ref, error)
	// Own, when set, picks the repositories whose versions go by a rule of
	// their own instead of Keep's (publish's namespace indexes: all but the
	// newest): for such a repository, own is true and drop are the versions
	// that go, oldest first. Such a repository names nothing and its
	// versions are not signed: they go without a mark or a look for
	// signatures, and are counted in GCResult.Indexes. Without it every
	// repository keeps opts.Keep versions.
	Own func(ctx context.Context, repo Repository, name string, tags []string) (drop []string, own bool, err error)
}

// GCResult is what a garbage collection removed (or, in a dry run, would).
type GCResult struct {
	// Versions are "repository:version" no longer kept, of the charts.
	Versions []string `json:"versions"`
	// Indexes counts the versions no longer kept of the repositories that
	// GCOptions.Own rules (the namespace indexes' old versions, each index
	// write one).
	Indexes int `json:"indexes"`
	// Blobs and Bytes count the layout's blobs no kept version references,
	// and leftovers of killed runs.
	Blobs int   `json:"blobs"`
	Bytes int64 `json:"bytes"`
	// Signatures count the signatures of the versions no longer kept.
	Signatures int `json:"signatures"`
	// Skipped are the repositories Select left as they are.
	Skipped []string `json:"skipped"`
	// Held are versions beyond Keep that stay because a kept version names
	// them.
	Held []Held `json:"held"`
}

// SplitRepositories splits names into those keep keeps and the others
// (keep nil: all kept), each in the order of names.
func SplitRepositories(names []string, keep func(string) bool) (kept, skipped []string) {
	for _, name := range names {
		if keep == nil || keep(name) {
			kept = append(kept, name)
		} else {
			skipped = append(skipped, name)
		}
	}
	return kept, skipped
}

// old returns the versions of tags beyond the newest keep, oldest first.
func old(tags []string, keep int) []string {
	var versions []*semver.Version
	for _, t := range tags {
		if v, err := semver.StrictNewVersion(t); err == nil {
			versions = append(versions, v)
		}
	}
	slices.SortFunc(versions, func(a, b *semver.Version) int { return b.Compare(a) })
	var out []string
	for _, v := range versions[min(keep, len(versions)):] {
		out = append(out, v.Original())
	}
	slices.Reverse(out)
	return out
}

// GC removes from the layout the versions beyond the newest opts.Keep of each
// repository that no kept version names (opts.Refs), then every blob that no kept version of its repository
// references and the temporary files of killed runs. The layout must be open
// writable (it is locked), or read-only for a dry run.
func (l *Layout) GC(ctx context.Context, opts GCOptions) (GCResult, error) {
	var r GCResult
	if opts.Keep < 1 {
		return r, fmt.Errorf("keep at least 1 version: Flux follows the newest")
	}
	names, err := l.Repositories(ctx, opts.Prefix)
	if err != nil {
		return r, err
	}
	names, r.Skipped = SplitRepositories(names, opts.Select)
	if l.readOnly && !opts.DryRun {
		return r, errReadOnly
	}
	plan, err := planGC(ctx, l, names, opts)
	if err != nil {
		return r, err
	}
	r.Held = plan.held
	// Every repository's versions untagged and its index changed first,
	// then one save of them all, then the blobs swept: a kill then leaves
	// no version naming a missing blob. A save per repository sorted every
	// repository opened (planGC opens them all): hours at 100,000.
	sweeps := make([]sweep, 0, len(names))
	for _, name := range names {
		sw, err := l.untag(ctx, name, plan.drop[name], plan.own[name], opts.DryRun, &r)
		if err != nil {
			return r, err
		}
		sweeps = append(sweeps, sw)
	}
	if !opts.DryRun {
		if err := l.Save(ctx); err != nil {
			return r, err
		}
	}
	for _, sw := range sweeps {
		n, size, err := sweepBlobs(ctx, sw.s, sw.name, sw.kept, sw.refs, opts.DryRun)
		if err != nil {
			return r, err
		}
		r.Blobs, r.Bytes = r.Blobs+n, r.Bytes+size
	}
	return r, nil
}

// sweep is what a repository keeps once its versions are untagged: the
// blobs of the rest go.
type sweep struct {
	s    *layoutStore
	name string
	kept []string
	refs []ocispec.Descriptor
}

// untag removes the versions drop from the layout's repository name and
// drops their signatures, in memory (Save writes its index without them);
// the sweep of the blobs no kept version or signature references is left
// to the caller, after the save. A dry run only counts, into r.
func (l *Layout) untag(ctx context.Context, name string, drop []string, own, dryRun bool, r *GCResult) (sweep, error) {
	s, err := l.open(ctx, name)
	if err != nil {
		return sweep{}, err
	}
	if !dryRun && len(drop) > 0 {
		if err := s.writable(ctx); err != nil {
			return sweep{}, err
		}
	}
	for _, v := range drop {
		r.removed(name, v, own)
		if !dryRun {
			if err := s.store.Untag(ctx, v); err != nil {
				return sweep{}, fmt.Errorf("removing %s:%s: %w", name, v, err)
			}
		}
	}
	kept := slices.DeleteFunc(slices.Clone(s.tags), func(t string) bool { return slices.Contains(drop, t) })
	refs, err := keptReferrers(ctx, s, kept)
	if err != nil {
		return sweep{}, fmt.Errorf("collecting %s: %w", name, err)
	}
	r.Signatures += len(s.referrers) - len(refs)
	if !dryRun && (len(drop) > 0 || len(refs) < len(s.referrers)) {
		if err := s.writable(ctx); err != nil {
			return sweep{}, err
		}
		l.mu.Lock()
		s.tags, s.referrers = kept, refs
		s.changed(l)
		l.mu.Unlock()
	}
	return sweep{s: s, name: name, kept: kept, refs: refs}, nil
}

// GC removes from the registry the versions beyond the newest opts.Keep of
// every repository under its prefix (and opts.Prefix) that no kept version
// names (opts.Refs): their manifests are
// deleted, and the registry's own garbage collection frees their blobs
// (the Distribution registry's registry garbage-collect). The registry must
// allow deletes.
func (r *Remote) GC(ctx context.Context, opts GCOptions) (GCResult, error) {
	var res GCResult
	if opts.Keep < 1 {
		return res, fmt.Errorf("keep at least 1 version: Flux follows the newest")
	}
	names, err := r.Repositories(ctx, opts.Prefix)
	if err != nil {
		return res, err
	}
	names, res.Skipped = SplitRepositories(names, opts.Select)
	plan, err := planGC(ctx, r, names, opts)
	if err != nil {
		return res, err
	}
	res.Held = plan.held
	for _, name := range names {
		repo, err := r.repository(name)
		if err != nil {
			return res, err
		}
		for _, v := range plan.drop[name] {
			res.removed(name, v, plan.own[name])
			desc, err := repo.Resolve(ctx, v)
			if err != nil {
				return res, fmt.Errorf("reading %s:%s: %w", name, v, explain(err))
			}
			if plan.own[name] {
				if !opts.DryRun {
					if err := repo.Delete(ctx, desc); err != nil && !IsNotFound(err) {
						return res, fmt.Errorf("deleting %s:%s: %w", name, v, explain(err))
					}
				}
				continue // not signed (GCOptions.Own)
			}
			// Its signatures first: a kill leaves a version unsigned,
			// never a signature of nothing.
			refs, err := registry.Referrers(ctx, repo, desc, api.MediaTypeSigstoreBundle)
			if err != nil && !IsNotFound(err) {
				return res, fmt.Errorf("reading the signatures of %s:%s: %w", name, v, explain(err))
			}
			res.Signatures += len(refs)
			if opts.DryRun {
				continue
			}
			for _, ref := range refs {
				if err := repo.Delete(ctx, ref); err != nil && !IsNotFound(err) {
					return res, fmt.Errorf("deleting a signature of %s:%s: %w", name, v, explain(err))
				}
			}
			if err := repo.Delete(ctx, desc); err != nil {
				return res, fmt.Errorf("deleting %s:%s: %w", name, v, explain(err))
			}
		}
	}
	return res, nil
}

// removed counts version v of repository name as removed; own: a
// repository GCOptions.Own rules.
func (r *GCResult) removed(name, v string, own bool) {
	if own {
		r.Indexes++
		return
	}
	r.Versions = append(r.Versions, name+":"+v)
}

// Repositories lists the registry's repositories under its prefix and then
// prefix, as names relative to its prefix (the registry's catalog).
func (r *Remote) Repositories(ctx context.Context, prefix string) ([]string, error) {
	reg, err := remote.NewRegistry(r.host)
	if err != nil {
		return nil, err
	}
	reg.Client, reg.PlainHTTP = r.client, r.plainHTTP
	reg.RepositoryListPageSize = 1000
	under := strings.TrimPrefix(strings.TrimSuffix(r.prefix, "/")+"/"+prefix, "/")
	// The catalog is sorted (by path component in distribution, by string in
	// others; in both, no name under the prefix follows a name greater than
	// it): start just before the names under the prefix and stop after them,
	// instead of reading the whole catalog for each namespace.
	var names []string
	err = reg.Repositories(ctx, strings.TrimSuffix(under, "/"), func(repos []string) error {
		for _, name := range repos {
			switch {
			case strings.HasPrefix(name, under):
				names = append(names, strings.TrimPrefix(strings.TrimPrefix(name, r.prefix), "/"))
			case name > under:
				return errListed
			}
		}
		return nil
	})
	if errors.Is(err, errListed) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the repositories: %w", explain(err))
	}
	return names, nil
}

// keptReferrers are the signatures of s whose subject is a kept version.
func keptReferrers(ctx context.Context, s *layoutStore, kept []string) ([]ocispec.Descriptor, error) {
	subjects := map[string]bool{}
	for _, tag := range kept {
		desc, err := s.backend.Resolve(ctx, tag)
		if err != nil {
			return nil, err
		}
		subjects[desc.Digest.String()] = true
	}
	var out []ocispec.Descriptor
	for _, ref := range s.referrers {
		m, err := ReadManifest(ctx, s.backend, ref)
		if err != nil {
			return nil, err
		}
		if m.Subject != nil && subjects[m.Subject.Digest.String()] {
			out = append(out, ref)
		}
	}
	return out, nil
}

// sweepBlobs removes the blobs of one repository's layout that none of its
// kept versions and their signatures (refs) references, and the leftovers
// of killed runs (ingest/); a dry run only counts them.
func sweepBlobs(ctx context.Context, s *layoutStore, name string, kept []string, refs []ocispec.Descriptor, dryRun bool) (blobs int, bytes int64, _ error) {
	// What the kept versions reference stays.
	keep := map[string]bool{}
	manifests := slices.Clone(refs)
	for _, tag := range kept {
		desc, err := s.backend.Resolve(ctx, tag)
		if err != nil {
			return 0, 0, err
		}
		manifests = append(manifests, desc)
	}
	for _, desc := range manifests {
		m, err := ReadManifest(ctx, s.backend, desc)
		if err != nil {
			return 0, 0, fmt.Errorf("reading %s@%s: %w", name, desc.Digest, err)
		}
		if err := m.Config.Digest.Validate(); err != nil {
			// An index, say: what it references is not read here.
			return 0, 0, fmt.Errorf("%s@%s is not a chart (%s): not collected", name, desc.Digest, desc.MediaType)
		}
		keep[desc.Digest.Encoded()] = true
		keep[m.Config.Digest.Encoded()] = true
		for _, layer := range m.Layers {
			keep[layer.Digest.Encoded()] = true
		}
	}
	for _, sub := range []string{"blobs", "ingest"} {
		root := filepath.Join(s.dir, sub)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			if sub == "blobs" && keep[d.Name()] {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			blobs++
			bytes += info.Size()
			if dryRun {
				return nil
			}
			return os.Remove(p)
		})
		if err != nil {
			return 0, 0, fmt.Errorf("collecting %s: %w", root, err)
		}
	}
	return blobs, bytes, nil
}
