package objdiff

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/renderer/chain"
)

// maxLevel bounds the chain followed: Solar's three levels. A HelmRelease
// an application chart renders is listed, not followed: its URL is the
// application's, and Solar asks no registry it names.
const maxLevel = 3

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

// Note says why a HelmRelease's chart was not rendered.
type Note struct {
	// Release is the HelmRelease, "<namespace>/<name>".
	Release, Reason string
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
	// Cache, when set, shares what is loaded and rendered with the other
	// Walkers of the same diff.
	Cache *Cache
	// Notes collects what was not rendered, and why.
	Notes []Note
	// Rendered, when set, is called with every chart the walk renders: its
	// level, where it was read from (the zero Ref for the bootstrap chart),
	// whether it is an application chart, and its objects (shared: not to
	// be changed).
	Rendered func(level int, ref Ref, app bool, objs []Object)
}

// Walk renders the bootstrap chart archive and every chart its HelmReleases
// install, level by level, and returns their objects (Changes with nothing
// before). A HelmRelease whose chart cannot be read or rendered is noted
// (Notes) and its subtree left out; a chart of the store that does not
// render is an error, and so is a cancelled ctx.
func (w *Walker) Walk(ctx context.Context, bootstrap []byte) ([]Object, error) {
	objs, err := walkPair(ctx, walkers{w, w}, docs{}, [2]*release{nil, root(bootstrap, w)}, 1)
	return objs[1], err
}

// root is the release of a bootstrap chart archive (nil: none): the Helm
// release solar bootstrap-manifests' HelmRelease installs.
func root(bootstrap []byte, w *Walker) *release {
	if bootstrap == nil {
		return nil
	}
	return &release{archive: bootstrap, values: map[string]any{}, name: "solar-bootstrap", namespace: w.FluxNamespace}
}

// note notes that a HelmRelease's chart was not rendered, and why.
func (w *Walker) note(hr Object, err error) {
	w.Notes = append(w.Notes, Note{Release: hr.Namespace + "/" + hr.Name, Reason: err.Error()})
}

// prepare is the release a HelmRelease installs, but its archive: the ref
// of its chart, its values, name and namespace; and its input, what it is
// installed from (the HelmRelease, its OCIRepository, its valuesFrom
// sources) as text.
func (w *Walker) prepare(hr Object, siblings []Object) (*release, string, error) {
	spec, _ := hr.body["spec"].(map[string]any)
	ref, source, err := w.source(spec, hr.Namespace, siblings)
	if err != nil {
		return nil, "", err
	}
	values, from, err := valuesOf(spec, hr.Namespace, siblings)
	if err != nil {
		return nil, "", err
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
	input := strings.Join(append([]string{raw(hr), raw(source)}, from...), "\n---\n")
	return &release{ref: ref, values: values, name: name, namespace: ns}, input, nil
}

// source is the ref of the OCIRepository a HelmRelease's chartRef names.
func (w *Walker) source(spec map[string]any, namespace string, siblings []Object) (Ref, Object, error) {
	cr, _ := spec["chartRef"].(map[string]any)
	kind, _ := cr["kind"].(string)
	name, _ := cr["name"].(string)
	if kind != "OCIRepository" {
		return Ref{}, Object{}, fmt.Errorf("chartRef of kind %q: only OCIRepository is followed", kind)
	}
	o, ok := find(siblings, "OCIRepository", namespace, name)
	if !ok {
		return Ref{}, Object{}, fmt.Errorf("its OCIRepository %s is not in the same chart", name)
	}
	s, _ := o.body["spec"].(map[string]any)
	r, _ := s["ref"].(map[string]any)
	ref := Ref{}
	ref.URL, _ = s["url"].(string)
	ref.Tag, _ = r["tag"].(string)
	ref.Digest, _ = r["digest"].(string)
	ref.Insecure, _ = s["insecure"].(bool)
	return ref, o, nil
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
// chartutil ChartValuesFromReferences); from are the sources read. A
// reference is looked for among the objects of the same chart, which is where
// Solar's chain puts them; an optional one that is missing is left out, as
// Flux leaves it out. Every string a Secret gives is replaced by its
// fingerprint: what a chart makes of it shows that it changed, never what it
// is.
func valuesOf(spec map[string]any, namespace string, siblings []Object) (values map[string]any, from []string, _ error) {
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
		var text string
		var err error
		if ok {
			text, err = dataOf(o, key)
		}
		switch {
		case (!ok || err != nil) && optional:
			continue
		case !ok:
			return nil, nil, fmt.Errorf("valuesFrom %s %s is not in the same chart", kind, name)
		case err != nil:
			return nil, nil, err
		}
		var v map[string]any
		if err := yaml.Unmarshal([]byte(text), &v); err != nil {
			return nil, nil, fmt.Errorf("valuesFrom %s %s key %s: %w", kind, name, key, err)
		}
		if kind == "Secret" {
			v = fingerprints(v).(map[string]any)
		}
		out = merge(out, v)
		from = append(from, raw(o))
	}
	if v, ok := spec["values"].(map[string]any); ok {
		// A copy: Helm's coalescing writes into the values it is given, which
		// must not be the rendered object's own (decoded JSON: DeepCopyJSON
		// takes every value it holds).
		out = merge(out, runtime.DeepCopyJSON(v))
	}
	return out, from, nil
}

// fingerprints is v with every string replaced by its fingerprint.
func fingerprints(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = fingerprints(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = fingerprints(e)
		}
		return out
	case string:
		return fingerprint(v)
	}
	return v
}

// raw is an object as JSON (keys sorted), unmasked: what is compared,
// never shown; JSON, as it is many times cheaper to make than YAML. A
// rendered object's was made when it was decoded.
func raw(o Object) string {
	if o.json != "" || o.body == nil {
		return o.json
	}
	b, _ := json.Marshal(o.body)
	return string(b)
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
