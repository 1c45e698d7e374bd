package targetreport

import (
	"strings"
)

// What solar's charts put on the chain's objects (charts/bootstrap,
// charts/common): the Target on the bootstrap chart's objects, the release
// ("<namespace>/<name>") on every level's.
const (
	LabelTarget       = "solar.opendefense.cloud/target"
	LabelRelease      = "solar.opendefense.cloud/release"
	AnnotationRelease = "solar.opendefense.cloud/release"
)

// Collect finds the releases of Target target among the OCIRepositories and
// HelmReleases of its cluster. A release is installed in two steps: the
// bootstrap chart's pair (labelled with the Target) installs the release
// chart, whose pair (named by the first HelmRelease's values, names.app)
// installs the application. A release reports:
//   - Name: its SolAr Release's name; Namespace: where its pairs live;
//   - Revision: the release chart version live (what solar publishes, and
//     what solar status compares);
//   - the application pair's conditions and phase once it exists; until
//     then the first pair's, where a release chart that cannot be pulled or
//     verified shows, its phase never Ready (the application is not there).
//
// The result is sorted. Two releases of one name (from two namespaces)
// report as "<namespace>.<name>", as their labels name them.
func Collect(target string, sources, helms []Object) []Release {
	byName := func(list []Object, ns, name string) Object {
		for _, o := range list {
			if meta(o, "namespace") == ns && meta(o, "name") == name {
				return o
			}
		}
		return nil
	}
	var out []Release
	names := map[string]int{}
	for _, first := range helms {
		labels, _ := first["metadata"].(map[string]any)["labels"].(map[string]any)
		release := annotation(first, AnnotationRelease)
		if labels[LabelTarget] != target || release == "" {
			continue
		}
		ns := meta(first, "namespace")
		r := Release{Name: release, Namespace: ns, Revision: Revision(first)}
		firstSource := byName(sources, ns, meta(first, "name"))
		app := appName(first)
		appSource, appHelm := byName(sources, ns, app), byName(helms, ns, app)
		if app != "" && (appSource != nil || appHelm != nil) {
			r.Phase = worst(PhaseOf(firstSource, first), PhaseOf(appSource, appHelm))
			r.SourceConditions, r.HelmConditions = Conditions(appSource), Conditions(appHelm)
		} else {
			r.Phase = PhaseOf(firstSource, first)
			if r.Phase == Ready {
				r.Phase = Progressing
			}
			r.SourceConditions, r.HelmConditions = Conditions(firstSource), Conditions(first)
		}
		_, short, _ := strings.Cut(release, "/")
		names[short]++
		out = append(out, r)
	}
	for i := range out {
		relNS, short, _ := strings.Cut(out[i].Name, "/")
		if names[short] > 1 {
			out[i].Name = relNS + "." + short
		} else {
			out[i].Name = short
		}
	}
	s := Spec{Releases: out}
	s.Sort()
	return s.Releases
}

// severity orders the phases from best to worst.
var severity = map[Phase]int{Ready: 0, Pending: 1, Progressing: 2, Degraded: 3, Failed: 4}

// worst is the worse of two phases.
func worst(a, b Phase) Phase {
	if severity[b] > severity[a] {
		return b
	}
	return a
}

// appName is the name the bootstrap chart gives a release's application
// pair: the first HelmRelease's spec.values.names.app.name.
func appName(helm Object) string {
	v := any(helm)
	for _, p := range []string{"spec", "values", "names", "app", "name"} {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	s, _ := v.(string)
	return s
}

func meta(o Object, field string) string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

func annotation(o Object, key string) string {
	m, _ := o["metadata"].(map[string]any)
	a, _ := m["annotations"].(map[string]any)
	s, _ := a[key].(string)
	return s
}
