package published

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Ref is a release chart version a bootstrap chart names: its oci:// URL,
// and the SolAr Release it is the chart of (<namespace>/<name>).
type Ref struct{ URL, Version, Release string }

// BootstrapRefs reads the release charts a bootstrap chart version names.
func BootstrapRefs(ctx context.Context, repo store.Repository, tag string) ([]Ref, error) {
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return nil, err
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a chart: %v", err)
	}
	return ManifestRefs(ctx, repo, m)
}

// ManifestRefs reads the release charts that the bootstrap chart of manifest
// m names, from its chart layer.
func ManifestRefs(ctx context.Context, repo store.Repository, m ocispec.Manifest) ([]Ref, error) {
	if len(m.Layers) != 1 {
		return nil, fmt.Errorf("not a chart: %d layers", len(m.Layers))
	}
	layer, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		return nil, err
	}
	files, err := ChartFiles([]publish.Blob{{Desc: m.Layers[0], Data: layer}})
	if err != nil {
		return nil, fmt.Errorf("its chart cannot be read: %w", err)
	}
	var values struct {
		Releases []Ref `json:"releases"`
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

// Repository is the store's repository an oci:// URL names: the longest
// suffix of its path that the store has (the URL carries the registry and
// prefix the charts were rendered for).
func Repository(url string, has func(name string) bool) string {
	parts := strings.Split(strings.TrimPrefix(url, "oci://"), "/")
	for i := 1; i < len(parts); i++ {
		if name := strings.Join(parts[i:], "/"); has(name) {
			return name
		}
	}
	return ""
}

// BootstrapVersions lists the versions of the bootstrap chart of Target
// ns/target in store: none when nothing was published for it.
func BootstrapVersions(ctx context.Context, st store.Store, ns, target string) ([]string, error) {
	repo, err := st.Repository(ctx, chain.BootstrapRepository(ns, target))
	if err != nil {
		return nil, err
	}
	return store.Tags(ctx, repo)
}
