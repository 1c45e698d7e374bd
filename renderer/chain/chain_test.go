package chain

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stretchr/testify/assert"
)

func TestCut(t *testing.T) {
	short := strings.Repeat("a", 63)
	assert.Equal(t, short, Cut(short, 63))
	long1, long2 := strings.Repeat("a", 60)+"-one", strings.Repeat("a", 60)+"-two"
	c1, c2 := Cut(long1, 63), Cut(long2, 63)
	assert.Len(t, c1, 63)
	assert.NotEqual(t, c1, c2, "cut values stay distinct")
	// The kept part never ends in a separator: names and label values must
	// stay valid.
	assert.Regexp(t, `^ab-[0-9a-f]{6}$`, Cut("ab"+strings.Repeat("-", 20), 10))
	assert.Regexp(t, `^ab-[0-9a-f]{6}$`, Cut("ab._"+strings.Repeat("x", 20), 11))
}

// TestHelmReleaseName checks the rule against helm-controller's own example
// of a shortened name: 40 characters, "-", 12 hex digits.
func TestHelmReleaseName(t *testing.T) {
	assert.Equal(t, "edge-1-podinfo", HelmReleaseName("edge-1-podinfo", ""))
	assert.Equal(t, "podinfo-edge-1-podinfo", HelmReleaseName("edge-1-podinfo", "podinfo"))
	long := HelmReleaseName(strings.Repeat("n", 40), strings.Repeat("t", 20))
	assert.Regexp(t, `^t{20}-n{19}-[0-9a-f]{12}$`, long)
	assert.Len(t, long, 53)
	assert.NotEqual(t, long, HelmReleaseName(strings.Repeat("n", 41), strings.Repeat("t", 19)),
		"the hash keeps two long names apart")
}

func TestFor(t *testing.T) {
	r := For("edge-1", "podinfo", "podinfo")
	assert.Equal(t, Release{
		Key:             "podinfo",
		Source:          Name{"solar-bootstrap-podinfo", "solar-bootstrap-podinfo"},
		App:             Name{"edge-1-podinfo", "edge-1-podinfo"},
		Values:          Name{"edge-1-podinfo-values", "edge-1-podinfo-values"},
		Credential:      Name{"edge-1-podinfo-credential", "edge-1-podinfo-credential"},
		TargetNamespace: "podinfo",
		AppRelease:      "podinfo-edge-1-podinfo",
	}, r)

	long := For(strings.Repeat("t", 40), strings.Repeat("k", 40), "")
	for _, n := range []Name{long.Source, long.App, long.Values, long.Credential} {
		assert.LessOrEqual(t, len(n.Name), MaxName)
		assert.NotEqual(t, n.Name, n.Full)
	}
	assert.Equal(t, long.App.Name, long.AppRelease, "without targetNamespace the Helm release is the HelmRelease's name")
}

func TestCollisions(t *testing.T) {
	ok := []Release{For("edge-1", "podinfo", "podinfo"), For("edge-1", "agent", "solar-system")}
	assert.Empty(t, Collisions(Objects("flux-system", ok)))

	// A Target named "solar" with the uniqueName "bootstrap-x" would give
	// its level-2 objects the name of another release's level-1 objects.
	bad := []Release{For("solar", "bootstrap-x", ""), For("solar", "x", "")}
	assert.Equal(t, []string{
		"OCIRepository flux-system/solar-bootstrap-x (level 1) is also OCIRepository flux-system/solar-bootstrap-x (level 2)",
		"HelmRelease flux-system/solar-bootstrap-x (level 1) is also HelmRelease flux-system/solar-bootstrap-x (level 2)",
		"Helm release flux-system/solar-bootstrap-x (level 2) is also Helm release flux-system/solar-bootstrap-x (level 3)",
	}, Collisions(Objects("flux-system", bad)))
}

// TestNamesValidWhereverTheSeparatorIs: whatever a name's dots and dashes,
// every name made from it is valid for Kubernetes (its own validation), so a
// cut never ends in a separator and Helm release names take no dots.
func TestNamesValidWhereverTheSeparatorIs(t *testing.T) {
	base := strings.Repeat("a", 70)
	for i := 1; i < len(base)-1; i++ {
		for _, sep := range []string{".", "-"} {
			key := base[:i] + sep + base[i+1:]
			r := For("edge-1."+key[:20], key, "podinfo")
			for _, n := range []Name{r.Source, r.App, r.Values, r.Credential} {
				assert.Empty(t, validation.IsDNS1123Subdomain(n.Name), n.Name)
				assert.LessOrEqual(t, len(n.Name), MaxName, n.Name)
			}
			assert.Empty(t, validation.IsDNS1123Label(r.App.Name), "a Helm release name charts use in Service names: %s", r.App.Name)
			assert.Empty(t, validation.IsDNS1123Label(r.AppRelease), r.AppRelease)
			label := Cut("alpha."+key, 63)
			assert.Empty(t, validation.IsValidLabelValue(label), label)
		}
	}
}

func TestCheckRepository(t *testing.T) {
	assert.NoError(t, CheckRepository("solar", ReleaseRepository("alpha", "alpha", "podinfo")))
	long := strings.Repeat("r", 235)
	assert.ErrorContains(t, CheckRepository("", ReleaseRepository("alpha", "alpha", long)),
		"would have a name of 243 characters, more than 240 (helm pull writes <chart>-<version>.tgz)")
	assert.ErrorContains(t, CheckRepository(strings.Repeat("p", 40), ReleaseRepository(strings.Repeat("n", 63), "alpha", strings.Repeat("r", 150))),
		"more than the 255 registries take")
}

// TestIsChartRepository: every repository solar names is a chart repository;
// the fleet's repositories and others are not.
func TestIsChartRepository(t *testing.T) {
	for _, r := range []string{
		BootstrapRepository("alpha", "edge-1"),
		ReleaseRepository("alpha", "shared", "podinfo"),
		AgentRepository("alpha", "edge-1", "alpha", "agent"),
	} {
		assert.True(t, IsChartRepository(r), r)
	}
	for _, r := range []string{
		"fleet/agent", "fleet/agent/attempts", "alpha/release-x", "bootstrap-edge-1",
		"alpha/beta/bootstrap-edge-1", "a/b/c/d/release-x", "alpha/alpha/podinfo",
	} {
		assert.False(t, IsChartRepository(r), r)
	}
}

// TestDependsOn: an application HelmRelease waits for its dependencies'
// application HelmReleases, named as For names them (cut names included),
// in its own namespace; none, no dependsOn at all.
func TestDependsOn(t *testing.T) {
	assert.Nil(t, DependsOn(nil))
	long := For("edge-1", strings.Repeat("x", 60), "ns")
	assert.Equal(t, []map[string]any{{"name": "edge-1-crds"}, {"name": long.App.Name}},
		DependsOn([]Release{For("edge-1", "crds", "ns"), long}))
	assert.LessOrEqual(t, len(long.App.Name), MaxName)
}
