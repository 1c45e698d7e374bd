// Package objdiff renders the charts of Solar's chain with Helm's engine,
// level by level as helm-controller installs them, and compares the
// Kubernetes objects two states of the store would put on a Target's
// cluster: what `solar diff` shows, per object, as `flux diff` and
// `helm diff` do.
//
// A chain starts at a Target's bootstrap chart (level 1), rendered with its
// own values in the Flux namespace. Every HelmRelease it renders is followed
// as helm-controller follows it: its chartRef names an OCIRepository of the
// same render, whose url and ref say which chart is installed, and its values
// are the values of its valuesFrom references merged in order, spec.values
// merged last (fluxcd/pkg chartutil ChartValuesFromReferences). The chart is
// rendered as the Helm release helm-controller names (chain.HelmReleaseName)
// in spec.targetNamespace, or else the HelmRelease's namespace. A chart of
// the store is read from it (Walker.Store); an application chart from its
// own registry (Walker.App), when that can be reached.
package objdiff

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// Object is one Kubernetes object a chart renders.
type Object struct {
	// Level is the chain level that renders it: 1 the bootstrap chart, 2 a
	// release chart, 3 the application chart.
	Level      int    `json:"level"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// body is the object, decoded, and json the same as JSON (keys sorted):
	// what is compared, never shown. Both are shared and never changed.
	body map[string]any
	json string
}

// Key names the object on a cluster: group, kind, namespace and name.
func (o Object) Key() string {
	group, _, _ := strings.Cut(o.APIVersion, "/")
	if !strings.Contains(o.APIVersion, "/") {
		group = ""
	}
	return strings.Join([]string{group, o.Kind, o.Namespace, o.Name}, "/")
}

// Body is the object as rendered, decoded from YAML: shared with every
// other reader, it must not be changed.
func (o Object) Body() map[string]any { return o.body }

// String is "Kind namespace/name", or "Kind name" for an object without
// namespace.
func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// release is what Helm is asked to install: a chart archive, its values,
// and the release's name and namespace.
type release struct {
	archive   []byte
	values    map[string]any
	name      string
	namespace string
	// app: an application chart, not one of Solar's; ref, where it is read
	// from.
	app bool
	ref Ref
	// chart, when set, is the archive loaded and narrowed (narrow).
	chart *chartv2.Chart
}

// renderTimeout bounds rendering one chart: Helm's engine does not stop a
// template that loops, so a render that takes longer is abandoned.
var renderTimeout = 30 * time.Second

// render renders a release with Helm's engine as an install would (its
// dependencies' conditions and tags applied, revision 1, Helm's default
// capabilities) and returns its objects; NOTES.txt and empty documents are
// left out, as Helm leaves them out of a release's manifest. An application
// chart's values schema is not checked: its $refs could read files and URLs
// of the machine the diff runs on. A release rendered before (cache) is not
// rendered again; a document decoded before (seen) is not decoded again.
func render(ctx context.Context, r release, level int, cache *Cache, seen docs) ([]Object, error) {
	key, keyed := r.key(level)
	if objs, ok := cache.rendered(key); ok && keyed {
		return objs, nil
	}
	ch := r.chart
	if ch == nil {
		var err error
		if ch, err = cache.load(r.archive, level > 1); err != nil {
			return nil, err
		}
	}
	if err := chartutil.ProcessDependencies(ch, r.values); err != nil {
		return nil, fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	opts := common.ReleaseOptions{Name: r.name, Namespace: r.namespace, Revision: 1, IsInstall: true}
	values, err := util.ToRenderValuesWithSchemaValidation(ch, r.values, opts, common.DefaultCapabilities, r.app)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	files, err := renderFiles(ctx, ch, values)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	var out []Object
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		docs := releaseutil.SplitManifests(files[name])
		for _, k := range slices.SortedFunc(maps.Keys(docs), byNumber) {
			dk := docKey{docs[k], r.namespace, level}
			objs, ok := seen[dk]
			if !ok {
				if objs, err = decode(docs[k], level, r.namespace); err != nil {
					return nil, fmt.Errorf("chart %s: %s: %w", ch.Name(), name, err)
				}
				if seen != nil {
					seen[dk] = objs
				}
			}
			out = append(out, objs...)
		}
	}
	// Clipped: who appends to a shared list copies it.
	out = slices.Clip(out)
	if keyed {
		cache.keep(key, out)
	}
	return out, nil
}

// renderFiles runs Helm's engine, abandoned (left to finish on its own) when
// ctx ends or renderTimeout passes.
func renderFiles(ctx context.Context, ch *chartv2.Chart, values common.Values) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, renderTimeout)
	defer cancel()
	type result struct {
		files map[string]string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		files, err := engine.Engine{}.RenderWithContext(ctx, ch, values)
		done <- result{files, err}
	}()
	select {
	case r := <-done:
		return r.files, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("rendering: %w", ctx.Err())
	}
}

// byNumber orders SplitManifests' keys ("manifest-10" after "manifest-9").
func byNumber(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// clusterScoped are the kinds of the API server's own groups, and of common
// add-ons, without a namespace (and every kind named Cluster...): an object
// of another kind without one is in the release's namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "CustomResourceDefinition": true,
	"StorageClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true,
	"PriorityClass": true, "IngressClass": true, "RuntimeClass": true, "APIService": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"FlowSchema": true, "PriorityLevelConfiguration": true, "CertificateSigningRequest": true,
	"GatewayClass": true, "VolumeSnapshotClass": true,
}

// Decode reads one YAML document as a chart at level would render it in
// namespace: no object for an empty one, the items of a List.
func Decode(doc string, level int, namespace string) ([]Object, error) {
	return decode(doc, level, namespace)
}

// decode reads one rendered document: no object for an empty one, the items
// of a List (as Helm installs them).
func decode(doc string, level int, namespace string) ([]Object, error) {
	var body map[string]any
	if err := yaml.Unmarshal([]byte(doc), &body); err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return nil, nil
	}
	if items, ok := body["items"].([]any); ok && body["kind"] == "List" {
		var out []Object
		for _, it := range items {
			item, _ := it.(map[string]any)
			o, err := object(item, level, namespace)
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		return out, nil
	}
	o, err := object(body, level, namespace)
	if err != nil {
		return nil, err
	}
	return []Object{o}, nil
}

// object is one decoded object; one without a namespace of a namespaced
// kind is in namespace.
func object(body map[string]any, level int, namespace string) (Object, error) {
	o := Object{Level: level, body: body}
	o.APIVersion, _ = body["apiVersion"].(string)
	o.Kind, _ = body["kind"].(string)
	meta, _ := body["metadata"].(map[string]any)
	o.Name, _ = meta["name"].(string)
	o.Namespace, _ = meta["namespace"].(string)
	if o.Kind == "" || o.Name == "" {
		return Object{}, fmt.Errorf("a document without kind or metadata.name")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return Object{}, err
	}
	o.json = string(b)
	if o.Namespace == "" && !clusterScoped[o.Kind] && !strings.HasPrefix(o.Kind, "Cluster") {
		o.Namespace = namespace
	}
	return o, nil
}
