package chart

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// render renders a chart with Helm's engine, in process, as the Helm release
// name in namespace with values, as helm-controller would.
func render(t *testing.T, src *Source, name, namespace string, values map[string]any) []map[string]any {
	t.Helper()
	pkg, err := src.Package("0.0.1", Options{})
	require.NoError(t, err)
	c, err := loader.LoadArchive(bytes.NewReader(pkg.Archive))
	require.NoError(t, err)
	vals, err := commonutil.ToRenderValues(c, values, common.ReleaseOptions{Name: name, Namespace: namespace, IsInstall: true}, nil)
	require.NoError(t, err)
	files, err := engine.Render(c, vals)
	require.NoError(t, err, "rendering %s as %s", src.Name, name)
	var docs []map[string]any
	for _, f := range slices.Sorted(maps.Keys(files)) {
		dec := yaml.NewDecoder(strings.NewReader(files[f]))
		for {
			var d map[string]any
			if err := dec.Decode(&d); err == io.EOF {
				break
			} else {
				require.NoError(t, err, f)
			}
			if d != nil {
				docs = append(docs, d)
			}
		}
	}
	return docs
}

// TestChainNamesNeverMeet renders, for every Target of examples/, every level
// of the Flux chain as helm-controller installs it: the bootstrap chart as
// the Helm release solar-bootstrap, each release chart as the Helm release of
// the HelmRelease that names it, each application as the Helm release its
// HelmRelease gets ([targetNamespace-]name). No (kind, namespace, name) is
// owned by two Helm releases, and what renders is what renderer/chain lists.
func TestChainNamesNeverMeet(t *testing.T) {
	const flux = "flux-system"
	plan := testenv.ExamplesPlan(t)
	srcs := sources(plan)
	apps := map[string]string{} // targetNamespace/Helm release -> Target
	for _, tp := range plan.Targets {
		require.False(t, tp.Problems.HasErrors(), "%v", tp.Problems)
		target := tp.Namespace + "/" + tp.Name
		owner := map[string]string{} // kind namespace/name -> Helm release
		own := func(release string, level int, kind, ns, name string) {
			key := fmt.Sprintf("%s %s/%s", kind, ns, name)
			prev, taken := owner[key]
			assert.False(t, taken, "%s: level %d (%s) and %s both own %s", target, level, release, prev, key)
			owner[key] = release
		}
		own("", 0, chain.HelmStorage, flux, chain.Bootstrap)
		boot := render(t, srcs["bootstrap-"+tp.Name], chain.Bootstrap, flux, nil)
		var names []chain.Release
		for _, d := range boot {
			kind, name := d["kind"].(string), d["metadata"].(map[string]any)["name"].(string)
			own(chain.Bootstrap, 1, kind, flux, name)
			if kind != "HelmRelease" {
				continue
			}
			// Level 2: the release chart, as this HelmRelease installs it.
			i := slices.IndexFunc(tp.Releases, func(s *resolve.Selected) bool { return s.Names.Source.Name == name })
			require.GreaterOrEqual(t, i, 0, "%s: HelmRelease %s is no release of the plan", target, name)
			sel := tp.Releases[i]
			names = append(names, sel.Names)
			own("", 1, chain.HelmStorage, flux, name)
			values, _ := d["spec"].(map[string]any)["values"].(map[string]any)
			for _, d2 := range render(t, srcs["release-"+sel.Release.Name], name, flux, values) {
				kind2, name2 := d2["kind"].(string), d2["metadata"].(map[string]any)["name"].(string)
				own(name, 2, kind2, flux, name2)
				if kind2 != "HelmRelease" {
					continue
				}
				// Level 3: helm-controller's release name and namespace.
				tns, _ := d2["spec"].(map[string]any)["targetNamespace"].(string)
				release := name2
				if tns != "" {
					release = tns + "-" + name2
				}
				require.LessOrEqual(t, len(release), 53, "examples/ names need no shortening")
				assert.Equal(t, sel.Names.AppRelease, release, "chain.For agrees with helm-controller's rule")
				own(name, 2, chain.HelmStorage, flux, release)
				key := tns + "/" + release
				assert.NotContains(t, apps, key, "the applications of %s and %s would own one Helm release", target, apps[key])
				apps[key] = target
			}
		}
		require.Len(t, names, len(tp.Releases), "%s: a HelmRelease per release", target)

		// What rendered is what chain.Objects lists (but for the values
		// ConfigMap and the credential Secret, listed for every release and
		// rendered for those with a valuesTemplate or a credential, and level
		// 0, which bootstrap-manifests prints).
		listed := map[string]bool{}
		for _, o := range chain.Objects(flux, names) {
			key := fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace, o.Name)
			switch {
			case o.Level == 2 && (o.Kind == "ConfigMap" || o.Kind == "Secret"):
				delete(owner, key)
			case o.Level > 0:
				listed[key] = true
			}
		}
		assert.Equal(t, listed, func() map[string]bool {
			got := map[string]bool{}
			for k := range owner {
				got[k] = true
			}
			return got
		}(), "%s: rendered objects", target)
		assert.Empty(t, chain.Collisions(chain.Objects(flux, names)))
	}
	assert.NotEmpty(t, apps)
}

// TestOnlyTheApplicationLevelWaits: the HelmReleases of the bootstrap chart
// (level 2 of the chain, like the first-contact one) install charts of Flux
// objects and must not hold a helm-controller worker waiting for them; the
// application's HelmRelease keeps Helm's readiness wait and remediation.
func TestOnlyTheApplicationLevelWaits(t *testing.T) {
	const flux = "flux-system"
	plan := testenv.ExamplesPlan(t)
	srcs := sources(plan)
	apps := 0
	for _, tp := range plan.Targets {
		for _, d := range render(t, srcs["bootstrap-"+tp.Name], chain.Bootstrap, flux, nil) {
			if d["kind"] != "HelmRelease" {
				continue
			}
			name := d["metadata"].(map[string]any)["name"].(string)
			spec := d["spec"].(map[string]any)
			for _, action := range []string{"install", "upgrade"} {
				assert.Equal(t, true, spec[action].(map[string]any)["disableWait"], "%s: %s %s", tp.Name, name, action)
			}
			i := slices.IndexFunc(tp.Releases, func(s *resolve.Selected) bool { return s.Names.Source.Name == name })
			require.GreaterOrEqual(t, i, 0)
			values, _ := spec["values"].(map[string]any)
			for _, d2 := range render(t, srcs["release-"+tp.Releases[i].Release.Name], name, flux, values) {
				if d2["kind"] != "HelmRelease" {
					continue
				}
				apps++
				spec2 := d2["spec"].(map[string]any)
				for _, action := range []string{"install", "upgrade"} {
					a := spec2[action].(map[string]any)
					assert.NotContains(t, a, "disableWait", "%s: the application of %s waits on %s", tp.Name, name, action)
					assert.EqualValues(t, 3, a["remediation"].(map[string]any)["retries"], "%s: %s", tp.Name, name)
				}
			}
		}
	}
	assert.NotZero(t, apps)
}
