package objdiff

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/renderer/chain"
)

// maxLevel bounds the chain followed: Solar's has three levels; a chart that
// installs HelmReleases of its own goes one further at most.
const maxLevel = 4

// Ref is where an OCIRepository points: its url and ref.
type Ref struct {
	URL, Tag, Digest string
	Insecure         bool
}

func (r Ref) String() string {
	if r.Digest != "" {
		return r.URL + "@" + r.Digest
	}
	return r.URL + ":" + r.Tag
}

// Walker renders a Target's chain.
type Walker struct {
	// Registry is HOST[:PORT][/PREFIX], where the store's charts are: an
	// OCIRepository under it is read from Store.
	Registry string
	// FluxNamespace is where the bootstrap chart is installed.
	FluxNamespace string
	// Store reads the archive of a store's chart at a version.
	Store func(ctx context.Context, repository, version string) ([]byte, error)
	// App reads an application chart from its registry; nil: application
	// charts are not rendered.
	App func(ctx context.Context, ref Ref) ([]byte, error)
	// Notes collects what was not rendered, and why.
	Notes []string
}

// Walk renders the bootstrap chart archive and every chart its HelmReleases
// install, level by level, and returns their objects. A chart that cannot be
// read is noted and its HelmRelease's objects are left as they are; a chart
// that does not render is an error.
func (w *Walker) Walk(ctx context.Context, bootstrap []byte) ([]Object, error) {
	if bootstrap == nil {
		return nil, nil
	}
	return w.install(ctx, release{archive: bootstrap, values: map[string]any{}, name: "bootstrap", namespace: w.FluxNamespace}, 1)
}

// install renders r at level, then follows the HelmReleases it renders.
func (w *Walker) install(ctx context.Context, r release, level int) ([]Object, error) {
	objs, err := render(ctx, r, level)
	if err != nil || level >= maxLevel {
		return objs, err
	}
	out := objs
	for _, o := range objs {
		if o.Kind != "HelmRelease" || !strings.HasPrefix(o.APIVersion, "helm.toolkit.fluxcd.io/") {
			continue
		}
		next, ok, err := w.follow(ctx, o, objs)
		if err != nil {
			return nil, fmt.Errorf("HelmRelease %s/%s: %w", o.Namespace, o.Name, err)
		}
		if !ok {
			continue
		}
		children, err := w.install(ctx, next, level+1)
		if err != nil && next.app {
			// Not Solar's chart: what it needs to render (a lookup of the
			// cluster, a value the cluster's Secret holds) may be missing here.
			w.Notes = append(w.Notes, fmt.Sprintf("HelmRelease %s/%s: the chart is not rendered: %v", o.Namespace, o.Name, err))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("HelmRelease %s/%s: %w", o.Namespace, o.Name, err)
		}
		out = append(out, children...)
	}
	return out, nil
}

// follow is the release a HelmRelease installs: its chart, values, name and
// namespace; ok is false (and a note says why) when its chart is not read.
func (w *Walker) follow(ctx context.Context, hr Object, siblings []Object) (release, bool, error) {
	spec, _ := hr.body["spec"].(map[string]any)
	ref, err := w.source(spec, hr.Namespace, siblings)
	if err != nil {
		return release{}, false, err
	}
	archive, app, err := w.read(ctx, ref)
	if err != nil {
		w.Notes = append(w.Notes, fmt.Sprintf("HelmRelease %s/%s: the chart %s is not rendered: %v", hr.Namespace, hr.Name, ref, err))
		return release{}, false, nil
	}
	if archive == nil {
		return release{}, false, nil
	}
	values, err := valuesOf(spec, hr.Namespace, siblings)
	if err != nil {
		return release{}, false, err
	}
	target, _ := spec["targetNamespace"].(string)
	ns := target
	if ns == "" {
		ns = hr.Namespace
	}
	name, _ := spec["releaseName"].(string)
	if name == "" {
		name = chain.HelmReleaseName(hr.Name, target)
	}
	return release{archive: archive, values: values, name: name, namespace: ns, app: app}, true, nil
}

// source is the ref of the OCIRepository a HelmRelease's chartRef names.
func (w *Walker) source(spec map[string]any, namespace string, siblings []Object) (Ref, error) {
	cr, _ := spec["chartRef"].(map[string]any)
	kind, _ := cr["kind"].(string)
	name, _ := cr["name"].(string)
	if kind != "OCIRepository" {
		return Ref{}, fmt.Errorf("chartRef of kind %q: only OCIRepository is followed", kind)
	}
	o, ok := find(siblings, "OCIRepository", namespace, name)
	if !ok {
		return Ref{}, fmt.Errorf("its OCIRepository %s is not in the same chart", name)
	}
	s, _ := o.body["spec"].(map[string]any)
	r, _ := s["ref"].(map[string]any)
	ref := Ref{}
	ref.URL, _ = s["url"].(string)
	ref.Tag, _ = r["tag"].(string)
	ref.Digest, _ = r["digest"].(string)
	ref.Insecure, _ = s["insecure"].(bool)
	return ref, nil
}

// read reads the chart a ref points at: from the store when it is one of
// Solar's under Registry, else (app) from its registry (App); nil when App
// is nil.
func (w *Walker) read(ctx context.Context, ref Ref) (archive []byte, app bool, _ error) {
	prefix := chain.URL(w.Registry, "")
	if repo, ok := strings.CutPrefix(ref.URL, prefix); ok && w.Registry != "" && chain.IsChartRepository(repo) {
		archive, err := w.Store(ctx, repo, ref.Tag)
		return archive, false, err
	}
	if w.App == nil {
		return nil, true, nil
	}
	archive, err := w.App(ctx, ref)
	return archive, true, err
}

// find is the object of a kind, namespace and name among objs.
func find(objs []Object, kind, namespace, name string) (Object, bool) {
	for _, o := range objs {
		if o.Kind == kind && o.Namespace == namespace && o.Name == name {
			return o, true
		}
	}
	return Object{}, false
}

// valuesOf are a HelmRelease's values as helm-controller composes them: its
// valuesFrom references merged in order, spec.values merged last (fluxcd/pkg
// chartutil ChartValuesFromReferences). A reference is looked for among the
// objects of the same chart, which is where Solar's chain puts them.
func valuesOf(spec map[string]any, namespace string, siblings []Object) (map[string]any, error) {
	out := map[string]any{}
	refs, _ := spec["valuesFrom"].([]any)
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		key, _ := ref["valuesKey"].(string)
		if key == "" {
			key = "values.yaml"
		}
		optional, _ := ref["optional"].(bool)
		o, ok := find(siblings, kind, namespace, name)
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("valuesFrom %s %s is not in the same chart", kind, name)
		}
		text, err := dataOf(o, key)
		if err != nil {
			return nil, err
		}
		var v map[string]any
		if err := yaml.Unmarshal([]byte(text), &v); err != nil {
			return nil, fmt.Errorf("valuesFrom %s %s key %s: %w", kind, name, key, err)
		}
		out = merge(out, v)
	}
	if v, ok := spec["values"].(map[string]any); ok {
		out = merge(out, copyOf(v))
	}
	return out, nil
}

// merge merges b into a, b winning, maps merged key by key: how Flux
// merges values (fluxcd/pkg chartutil, MergeMaps).
func merge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = merge(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// copyOf is a deep copy of v, through YAML: the values merged into are never
// the rendered object's own.
func copyOf(v map[string]any) map[string]any {
	b, _ := yaml.Marshal(v)
	var out map[string]any
	_ = yaml.Unmarshal(b, &out)
	return out
}

// dataOf is a key of a ConfigMap's data or a Secret's data (base64) or
// stringData.
func dataOf(o Object, key string) (string, error) {
	stringData, _ := o.body["stringData"].(map[string]any)
	if s, ok := stringData[key].(string); ok {
		return s, nil
	}
	data, _ := o.body["data"].(map[string]any)
	s, ok := data[key].(string)
	if !ok {
		return "", fmt.Errorf("%s %s has no key %s", o.Kind, o.Name, key)
	}
	if o.Kind != "Secret" {
		return s, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("%s %s key %s: %w", o.Kind, o.Name, key, err)
	}
	return string(b), nil
}
