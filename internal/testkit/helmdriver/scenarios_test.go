package helmdriver_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chart"
)

// scenario is what a test does to a HelmRelease, step by step; after each
// step the controller is left to settle (until) and what it left is
// recorded.
type scenario struct {
	name  string
	steps []step
}

type step struct {
	name  string
	do    func(*session)
	until func(*unstructured.Unstructured) bool
}

// scenarios are the paths the chain tests drive, each on a HelmRelease
// "app" with Solar's application-level policy (chart.AppPolicy: three
// retries, Helm tests, drift detection) and its OCIRepository "app":
//   - lifecycle: first install, an upgrade to a new chart version, an
//     upgrade of the values, and the HelmRelease deleted (uninstall);
//   - label: a chart that puts .Chart.Version into a label: helm-controller
//     appends +<digest> to it, which a label may not hold, so every install
//     fails until the retries are spent;
//   - timeout: an upgrade whose pods fit no node never becomes ready within
//     spec.timeout (15s here): rolled back, retried, stalled;
//   - depends: a HelmRelease whose spec.dependsOn names one that is not
//     there waits (DependencyNotReady) and installs nothing; without the
//     dependency, it installs.
func scenarios() []scenario {
	return []scenario{
		{name: "lifecycle", steps: []step{
			{"install", func(s *session) { s.apply("app", "0.1.0", nil, "") }, readyAt("0.1.0", 1)},
			{"upgrade-chart", func(s *session) { s.tag("0.2.0") }, readyAt("0.2.0", 1)},
			{"upgrade-values", func(s *session) { s.values(map[string]any{"greeting": "hello"}) }, readyAt("0.2.0", 2)},
			{"remove", func(s *session) { s.remove() }, gone},
		}},
		{name: "label", steps: []step{
			{"install", func(s *session) { s.apply("labelled", "0.1.0", nil, "") }, stalled},
		}},
		{name: "depends", steps: []step{
			{"waits", func(s *session) {
				s.applyWith("app", "0.1.0", nil, "", map[string]any{"dependsOn": []any{map[string]any{"name": "dep"}}})
			}, reason("Ready", "False", "DependencyNotReady")},
			{"released", func(s *session) {
				s.patch(testenv.HelmReleaseGVR, map[string]any{"spec": map[string]any{"dependsOn": nil}})
			}, readyAt("0.1.0", 2)},
		}},
		{name: "timeout", steps: []step{
			{"install", func(s *session) { s.apply("app", "0.1.0", nil, "15s") }, readyAt("0.1.0", 1)},
			{"upgrade-never-ready", func(s *session) {
				s.values(map[string]any{"nodeSelector": map[string]any{"solar.example/pool": "none"}})
			}, stalled},
		}},
	}
}

// apply creates the OCIRepository and the HelmRelease of the chart at
// version, as Solar's release chart renders an application's pair.
func (s *session) apply(name, version string, values map[string]any, timeout string) {
	s.t.Helper()
	s.applyWith(name, version, values, timeout, nil)
}

// applyWith is apply with more fields of the HelmRelease's spec.
func (s *session) applyWith(name, version string, values map[string]any, timeout string, more map[string]any) {
	s.t.Helper()
	repo := map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
		"metadata": map[string]any{"name": "app", "namespace": s.ns},
		"spec": map[string]any{
			"url": "oci://" + s.c.reg.Host + "/charts/" + name, "ref": map[string]any{"tag": version},
			"secretRef": map[string]any{"name": "pull"}, "interval": "10m",
			"layerSelector": asMap(s, chart.LayerSelector()),
		},
	}
	spec := asMap(s, chart.AppPolicy(true, chart.AppOptions{}))
	spec["chartRef"] = map[string]any{"kind": "OCIRepository", "name": "app"}
	spec["interval"] = "10m"
	spec["targetNamespace"] = s.ns + "-app"
	if values != nil {
		spec["values"] = values
	}
	if timeout != "" {
		spec["timeout"] = timeout
	}
	maps.Copy(spec, more)
	hr := map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "app", "namespace": s.ns},
		"spec":     spec,
	}
	_, err := s.c.dyn.Resource(testenv.OCIRepositoryGVR).Namespace(s.ns).Create(context.Background(), &unstructured.Unstructured{Object: repo}, metav1.CreateOptions{})
	require.NoError(s.t, err)
	_, err = s.c.dyn.Resource(testenv.HelmReleaseGVR).Namespace(s.ns).Create(context.Background(), &unstructured.Unstructured{Object: hr}, metav1.CreateOptions{})
	require.NoError(s.t, err)
}

// tag points the OCIRepository at another chart version.
func (s *session) tag(version string) {
	s.patch(testenv.OCIRepositoryGVR, map[string]any{"spec": map[string]any{"ref": map[string]any{"tag": version}}})
}

// values replaces the HelmRelease's values (a new generation).
func (s *session) values(v map[string]any) {
	s.patch(testenv.HelmReleaseGVR, map[string]any{"spec": map[string]any{"values": v}})
}

func (s *session) patch(gvr schema.GroupVersionResource, p map[string]any) {
	s.t.Helper()
	b, err := json.Marshal(p)
	require.NoError(s.t, err)
	_, err = s.c.dyn.Resource(gvr).Namespace(s.ns).Patch(context.Background(), "app", types.MergePatchType, b, metav1.PatchOptions{})
	require.NoError(s.t, err)
}

// remove deletes the HelmRelease.
func (s *session) remove() {
	require.NoError(s.t, s.c.dyn.Resource(testenv.HelmReleaseGVR).Namespace(s.ns).Delete(context.Background(), "app", metav1.DeleteOptions{}))
}

func asMap(s *session, v any) map[string]any {
	b, err := json.Marshal(v)
	require.NoError(s.t, err)
	var m map[string]any
	require.NoError(s.t, json.Unmarshal(b, &m))
	return m
}

// readyAt: Ready=True about generation, nothing in progress, and the newest
// release at the chart version (with or without helm-controller's suffix).
func readyAt(version string, generation int64) func(*unstructured.Unstructured) bool {
	return func(hr *unstructured.Unstructured) bool {
		if hr == nil || hr.GetGeneration() != generation || !is(hr, "Ready", "True") || is(hr, "Reconciling", "True") {
			return false
		}
		history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
		if len(history) == 0 {
			return false
		}
		v, _ := history[0].(map[string]any)["chartVersion"].(string)
		return v == version || strings.HasPrefix(v, version+"+")
	}
}

// stalled: Stalled=True about the current generation.
func stalled(hr *unstructured.Unstructured) bool {
	return hr != nil && is(hr, "Stalled", "True")
}

func gone(hr *unstructured.Unstructured) bool { return hr == nil }

// reason: a condition of type t with status st and that reason about the
// current generation.
func reason(t, st, why string) func(*unstructured.Unstructured) bool {
	return func(hr *unstructured.Unstructured) bool {
		if hr == nil || !is(hr, t, st) {
			return false
		}
		raw, _, _ := unstructured.NestedSlice(hr.Object, "status", "conditions")
		for _, r := range raw {
			if m, _ := r.(map[string]any); m["type"] == t {
				return m["reason"] == why
			}
		}
		return false
	}
}

// is says whether hr has a condition of type t with status st about its
// current generation.
func is(hr *unstructured.Unstructured, t, st string) bool {
	raw, _, _ := unstructured.NestedSlice(hr.Object, "status", "conditions")
	for _, r := range raw {
		m, _ := r.(map[string]any)
		if m["type"] == t {
			g, _ := m["observedGeneration"].(int64)
			return m["status"] == st && g == hr.GetGeneration()
		}
	}
	return false
}
