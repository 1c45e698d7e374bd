package targetreport

import (
	"cmp"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/api"
)

// Collect finds the releases of Target ns/target among the OCIRepositories
// and HelmReleases of its cluster. A release is installed in two steps: the
// bootstrap chart's pair (labelled with the Target) installs the release
// chart, whose pair (named by the first HelmRelease's values, names.app)
// installs the application. A release reports:
//   - Name: ReleaseName of its SolAr Release; Namespace: where its pairs live;
//   - Revision: the release chart version live (what solar publishes, and
//     what solar status compares);
//   - the application pair's conditions and phase once it exists; until
//     then the first pair's, where a release chart that cannot be pulled or
//     verified shows, its phase never Ready (the application is not there).
//
// A first HelmRelease whose release annotation is not <namespace>/<name>
// is left out, and so is a second one of a release already found (by
// object name order): the report's list keys stay unique. The result is
// sorted.
func Collect(ns, target string, sources, helms []Object) []Release {
	firsts := slices.Clone(helms)
	slices.SortFunc(firsts, func(a, b Object) int {
		return cmp.Or(cmp.Compare(meta(a, "namespace"), meta(b, "namespace")), cmp.Compare(meta(a, "name"), meta(b, "name")))
	})
	var out []Release
	seen := map[[2]string]bool{}
	for _, first := range firsts {
		release := annotation(first, api.AnnotationRelease)
		relNS, relName, ok := strings.Cut(release, "/")
		if label(first, api.LabelTarget) != target || !ok || relNS == "" || relName == "" {
			continue
		}
		r := Release{Name: ReleaseName(ns, relNS, relName), Namespace: meta(first, "namespace"), Revision: Revision(first)}
		if seen[[2]string{r.Namespace, r.Name}] {
			continue
		}
		seen[[2]string{r.Namespace, r.Name}] = true
		phase(&r, first, sources, helms)
		out = append(out, r)
	}
	s := Spec{Releases: out}
	s.Sort()
	return s.Releases
}

// ReleaseName is how a report names the Release relNS/relName of a Target
// of namespace ns: its name, as SolAr's reports do, when it is the
// Target's namespace's; else relNS/relName, which no name can be.
func ReleaseName(ns, relNS, relName string) string {
	if relNS == ns {
		return relName
	}
	return relNS + "/" + relName
}

// phase fills r's phase and conditions from the release's first HelmRelease
// and, once it exists, its application pair.
func phase(r *Release, first Object, sources, helms []Object) {
	byName := func(list []Object, name string) Object {
		for _, o := range list {
			if meta(o, "namespace") == r.Namespace && meta(o, "name") == name {
				return o
			}
		}
		return nil
	}
	firstSource := byName(sources, meta(first, "name"))
	app := appName(first)
	appSource, appHelm := byName(sources, app), byName(helms, app)
	if app != "" && (appSource != nil || appHelm != nil) {
		r.Phase = worst(PhaseOf(firstSource, first), PhaseOf(appSource, appHelm))
		r.SourceConditions, r.HelmConditions = Conditions(appSource), Conditions(appHelm)
		return
	}
	r.Phase = PhaseOf(firstSource, first)
	if r.Phase == Ready {
		r.Phase = Progressing
	}
	r.SourceConditions, r.HelmConditions = Conditions(firstSource), Conditions(first)
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

func label(o Object, key string) string {
	m, _ := o["metadata"].(map[string]any)
	l, _ := m["labels"].(map[string]any)
	s, _ := l[key].(string)
	return s
}

func annotation(o Object, key string) string {
	m, _ := o["metadata"].(map[string]any)
	a, _ := m["annotations"].(map[string]any)
	s, _ := a[key].(string)
	return s
}
