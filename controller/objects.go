package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
)

// newObject is an empty object of kind, to watch or get.
func newObject(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kube.GVK(kind))
	return u
}

// list lists the objects of kind in ns ("" for every namespace) from the
// cache.
func list(ctx context.Context, c client.Reader, kind, ns string, opts ...client.ListOption) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(kube.GVK(kind + "List"))
	if err := c.List(ctx, l, append(opts, client.InNamespace(ns))...); err != nil {
		return nil, fmt.Errorf("listing %s: %w", kind, err)
	}
	return l.Items, nil
}

// related are the namespaces whose objects may change what ns renders: the
// namespaces linked to ns by ReferenceGrants, in either direction, and so on
// (a ReleaseBinding of team binds a Target of ns and names a Release whose
// ComponentVersion is in lib). A grant of X from Y links X and Y: Y's
// objects may refer to X's. A reference without a grant fails closed, so no
// namespace outside them matters.
func related(grants []unstructured.Unstructured, ns string) []string {
	links := map[string][]string{}
	for i := range grants {
		to := grants[i].GetNamespace()
		for _, from := range grantFrom(&grants[i]) {
			links[to] = append(links[to], from)
			links[from] = append(links[from], to)
		}
	}
	seen := map[string]bool{ns: true}
	var out []string
	for queue := []string{ns}; len(queue) > 0; queue = queue[1:] {
		for _, n := range links[queue[0]] {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
				queue = append(queue, n)
			}
		}
	}
	return out
}

// grantFrom are the namespaces a ReferenceGrant lets refer to its own.
func grantFrom(g *unstructured.Unstructured) []string {
	from, _, _ := unstructured.NestedSlice(g.Object, "spec", "from")
	var out []string
	for _, f := range from {
		if m, ok := f.(map[string]any); ok {
			if ns, ok := m["namespace"].(string); ok {
				out = append(out, ns)
			}
		}
	}
	return out
}

// input reads, from the cache, what a plan of ns needs: every object of ns
// and of its related namespaces, and the PipelineConfig of configNS (only
// there: one in any other namespace would set every agent's API server).
// Each object is loaded from its YAML as a file named KIND/NS/NAME would be,
// so a problem names the object.
func input(ctx context.Context, c client.Reader, ns, configNS string) ([]*load.Object, diag.List, error) {
	grants, err := list(ctx, c, api.KindReferenceGrant, "")
	if err != nil {
		return nil, nil, err
	}
	namespaces := append([]string{ns}, related(grants, ns)...)
	configs, err := list(ctx, c, api.KindPipelineConfig, configNS)
	if err != nil {
		return nil, nil, err
	}
	var (
		objs     []*load.Object
		problems diag.List
	)
	for _, kind := range api.ControllerKinds {
		var items []unstructured.Unstructured
		if kind == api.KindPipelineConfig {
			items = configs
		} else {
			in := namespaces
			if kind == api.KindRegistry {
				in = withMirrorNamespace(namespaces, configs, configNS)
			}
			for _, n := range in {
				more, err := list(ctx, c, kind, n)
				if err != nil {
					return nil, nil, err
				}
				items = append(items, more...)
			}
		}
		o, p, err := loadObjects(items)
		if err != nil {
			return nil, nil, err
		}
		objs, problems = append(objs, o...), append(problems, p...)
	}
	return objs, problems, nil
}

// withMirrorNamespace is namespaces and the namespace of the mirror
// Registry the PipelineConfigs name (spec.registries.mirror.registryRef;
// the PipelineConfig's own when it names none), which every Target's render
// reads whatever the grants relate: validation still asks the grant of a
// Registry of another namespace than the PipelineConfig's.
func withMirrorNamespace(namespaces []string, configs []unstructured.Unstructured, configNS string) []string {
	out := namespaces
	for _, pc := range configs {
		if _, ok, _ := unstructured.NestedMap(pc.Object, "spec", "registries", "mirror", "registryRef"); !ok {
			continue
		}
		n, _, _ := unstructured.NestedString(pc.Object, "spec", "registries", "mirror", "registryRef", "namespace")
		n = cmp.Or(n, configNS)
		if !slices.Contains(out, n) {
			out = append(slices.Clone(out), n)
		}
	}
	return out
}

// loadObjects are items as the loader reads them (loadObject).
func loadObjects(items []unstructured.Unstructured) ([]*load.Object, diag.List, error) {
	var objs []*load.Object
	var problems diag.List
	for i := range items {
		o, p, err := loadObject(&items[i])
		if err != nil {
			return nil, nil, err
		}
		objs, problems = append(objs, o...), append(problems, p...)
	}
	return objs, problems, nil
}

// loadObject is u as the loader reads it from a file. The server's fields
// (status, managedFields, uid) are dropped, as from a file.
func loadObject(u *unstructured.Unstructured) ([]*load.Object, diag.List, error) {
	c := u.DeepCopy()
	delete(c.Object, "status")
	c.SetManagedFields(nil)
	b, err := yaml.Marshal(c.Object)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	name := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
	objs, problems := load.Bytes(name, b, load.Options{Namespace: u.GetNamespace()})
	return objs, problems, nil
}
