package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// Violation is a broken promise of the store, at one version.
type Violation struct {
	Repository string `json:"repository"`
	Version    string `json:"version"`
	Message    string `json:"message"`
}

func (v Violation) String() string {
	if v.Version == "" {
		return v.Repository + ": " + v.Message
	}
	return v.Repository + ":" + v.Version + ": " + v.Message
}

// plainVersion is the only kind of tag solar writes.
var plainVersion = regexp.MustCompile(`^0\.0\.[1-9][0-9]*$`)

// Verify walks the chart repositories of the store under prefix and checks
// what solar promises: tags are plain 0.0.N versions; every version's manifest
// and blobs are there; every bootstrap chart version names release chart
// versions the store holds. skipped are the repositories under prefix that
// are not solar's charts (chain.IsChartRepository), such as the fleet's: not
// checked.
func Verify(ctx context.Context, store publish.Store, prefix string) (out []Violation, skipped []string, err error) {
	lister, ok := store.(publish.Lister)
	if !ok {
		return nil, nil, fmt.Errorf("the store cannot list its repositories")
	}
	repos, err := lister.Repositories(ctx, prefix)
	if err != nil {
		return nil, nil, err
	}
	repos, skipped = publish.SplitRepositories(repos, chain.IsChartRepository)
	tagsOf := map[string][]string{}
	for _, name := range repos {
		repo, err := store.Repository(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		tags, err := publish.Tags(ctx, repo)
		if err != nil {
			return nil, nil, fmt.Errorf("listing the versions of %s: %w", name, err)
		}
		tagsOf[name] = tags
		for _, tag := range tags {
			if !plainVersion.MatchString(tag) {
				out = append(out, Violation{name, tag, "not a version solar writes (0.0.N)"})
				continue
			}
			out = append(out, verifyVersion(ctx, repo, name, tag)...)
		}
	}
	// Bootstrap charts name release charts that must be there.
	for _, name := range repos {
		if !chain.IsBootstrapRepository(name) {
			continue
		}
		repo, err := store.Repository(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		for _, tag := range tagsOf[name] {
			refs, err := bootstrapRefs(ctx, repo, tag)
			if err != nil {
				out = append(out, Violation{name, tag, err.Error()})
				continue
			}
			for _, ref := range refs {
				target := repository(ref.URL, repos)
				switch {
				case target == "":
					out = append(out, Violation{name, tag, fmt.Sprintf("names %s, which the store does not have", ref.URL)})
				case !slices.Contains(tagsOf[target], ref.Version):
					out = append(out, Violation{name, tag, fmt.Sprintf("names %s at %s, which the store does not have", target, ref.Version)})
				}
			}
		}
	}
	return out, skipped, nil
}

// Collector is a store that removes its old versions: publish.Layout,
// publish.Remote.
type Collector interface {
	publish.Lister
	GC(ctx context.Context, opts publish.GCOptions) (publish.GCResult, error)
}

// GC removes the old versions of solar's chart repositories in c, as Verify
// checks them (chain.IsChartRepository); the other repositories under the
// prefix are left as they are (GCResult.Skipped). It marks from every
// bootstrap chart version it keeps: the release chart versions one names stay
// (GCResult.Held), for a Target not rendered since (one skipped, say, because
// its credential failed) still installs them.
func GC(ctx context.Context, c Collector, opts publish.GCOptions) (publish.GCResult, error) {
	repos, err := c.Repositories(ctx, opts.Prefix)
	if err != nil {
		return publish.GCResult{}, err
	}
	opts.Select = chain.IsChartRepository
	opts.Refs = func(ctx context.Context, repo publish.Repository, name, version string) ([]publish.Ref, error) {
		if !chain.IsBootstrapRepository(name) {
			return nil, nil
		}
		named, err := bootstrapRefs(ctx, repo, version)
		if err != nil {
			return nil, err
		}
		var refs []publish.Ref
		for _, n := range named {
			if target := repository(n.URL, repos); target != "" {
				refs = append(refs, publish.Ref{Repository: target, Version: n.Version})
			}
		}
		return refs, nil
	}
	return c.GC(ctx, opts)
}

// verifyVersion checks that a version's manifest and blobs are there.
func verifyVersion(ctx context.Context, repo publish.Repository, name, tag string) []Violation {
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return []Violation{{name, tag, fmt.Sprintf("its manifest cannot be read: %v", err)}}
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return []Violation{{name, tag, fmt.Sprintf("its manifest cannot be read: %v", err)}}
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return []Violation{{name, tag, fmt.Sprintf("its manifest is damaged: %v", err)}}
	}
	var out []Violation
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		if ok, err := repo.Exists(ctx, d); err != nil || !ok {
			out = append(out, Violation{name, tag, fmt.Sprintf("blob %s is missing", d.Digest)})
		}
	}
	return out
}

// bootstrapRefs reads the release charts a bootstrap chart version names.
func bootstrapRefs(ctx context.Context, repo publish.Repository, tag string) ([]struct{ URL, Version string }, error) {
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return nil, err
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil || len(m.Layers) != 1 {
		return nil, fmt.Errorf("not a chart: %v", err)
	}
	layer, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		return nil, err
	}
	files, err := chartFiles([]publish.Blob{{Desc: m.Layers[0], Data: layer}})
	if err != nil {
		return nil, fmt.Errorf("its chart cannot be read: %w", err)
	}
	var values struct {
		Releases []struct{ URL, Version string } `json:"releases"`
	}
	if err := yaml.Unmarshal([]byte(files["values.yaml"]), &values); err != nil {
		return nil, fmt.Errorf("its values cannot be read: %w", err)
	}
	for _, r := range values.Releases {
		if _, err := semver.StrictNewVersion(r.Version); err != nil {
			return nil, fmt.Errorf("names %s at %q, not a version", r.URL, r.Version)
		}
	}
	return values.Releases, nil
}

// repository is the store's repository an oci:// URL names: the longest
// suffix of its path that the store has (the URL carries the registry and
// prefix the charts were rendered for).
func repository(url string, repos []string) string {
	parts := strings.Split(strings.TrimPrefix(url, "oci://"), "/")
	for i := 1; i < len(parts); i++ {
		if name := strings.Join(parts[i:], "/"); slices.Contains(repos, name) {
			return name
		}
	}
	return ""
}
