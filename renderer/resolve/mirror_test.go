package resolve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// site is the site's registry: plain HTTP, with a pull secret of its own.
const site = `
kind: Registry
metadata: {name: site, namespace: shared}
spec: {hostname: "site.example:5000", plainHTTP: true, targetPullSecretName: site-pull}
`

// bareSite is a site registry without a pull secret of its own; extra is
// more of its spec.
func bareSite(extra string) string {
	return "kind: Registry\nmetadata: {name: bare-site, namespace: shared}\nspec: {hostname: bare.example" + extra + "}\n"
}

// mirrorConfig is a PipelineConfig of namespace ns whose mirror is extra
// ("registryRef: {...}, path: ...").
func mirrorConfig(ns, extra string) string {
	return "kind: PipelineConfig\nmetadata: {name: solar, namespace: " + ns + "}\nspec: {registries: {mirror: {" + extra + "}}}\n"
}

// cvRelease is a Release of namespace a of the base's ComponentVersion.
const cvRelease = `
kind: Release
metadata: {name: cv, namespace: a}
spec: {componentVersionRef: {name: web-1, namespace: shared}}
`

func TestMirrorPointsEveryApplicationChartAtTheSite(t *testing.T) {
	p := resolveDocs(t, Options{}, site, mirrorConfig("shared", "registryRef: {name: site}"),
		target("a", "t", ""), release("a", "web", "", "uniqueName: inline"), cvRelease,
		binding("a", "b1", "web", "a", "t"), binding("a", "b2", "cv", "a", "t"))
	tr := p.Targets[0]
	require.Empty(t, tr.Problems)
	require.NotNil(t, tr.Mirror)
	assert.Equal(t, "site.example:5000/mirror", tr.Mirror.Base)
	require.Len(t, tr.Releases, 2)
	for _, r := range tr.Releases {
		// Both the ComponentVersion's chart and the inline one.
		c := r.Chart
		require.NotNil(t, c.Origin, r.Release.Name)
		assert.Equal(t, "site.example:5000/mirror/"+c.Origin.Repository, c.Repository, "host kept under the mirror's path")
		assert.Equal(t, "1.0.0", c.Tag, "the tag stays")
		assert.True(t, c.Insecure, "the mirror's plainHTTP")
		assert.False(t, c.Origin.Insecure)
		assert.Equal(t, "site-pull", r.PullSecret, "the Target's pull secret of the mirror, not src-pull")
	}
	assert.Equal(t, "src.example/charts/web", tr.Releases[0].Chart.Origin.Repository)
	assert.Equal(t, "site-pull", tr.PullSecrets["site.example:5000"])

	// A path of its own; without a mirror nothing is relocated.
	p = resolveDocs(t, Options{}, site, mirrorConfig("shared", "registryRef: {name: site}, path: air/gap"),
		target("a", "t", ""), cvRelease, binding("a", "b", "cv", "a", "t"))
	assert.Equal(t, "site.example:5000/air/gap/src.example/charts/web", p.Targets[0].Releases[0].Chart.Repository)
	p = resolveDocs(t, Options{}, site, target("a", "t", ""), cvRelease, binding("a", "b", "cv", "a", "t"))
	c := p.Targets[0].Releases[0].Chart
	assert.Nil(t, p.Targets[0].Mirror)
	assert.Equal(t, Chart{Repository: "src.example/charts/web", Tag: "1.0.0", ComponentVersion: c.ComponentVersion}, c)
}

// TestMirrorPullSecrets: with --strict-registry-bindings a Target needs a
// pull secret of the mirror's host (the Registry's own, or a
// RegistryBinding's); one of the source's does not count.
func TestMirrorPullSecrets(t *testing.T) {
	docs := []string{mirrorConfig("shared", "registryRef: {name: bare-site}"), target("a", "t", ""), cvRelease,
		binding("a", "b", "cv", "a", "t"), regBinding("a", "src", "t", "source")}
	p := resolveDocs(t, Options{StrictRegistryBindings: true}, append(docs, bareSite(""))...)
	assert.Equal(t, []string{"a/t: web=a/cv ERR[Target a/t: release a/cv pulls from the mirror bare.example, which no RegistryBinding of the Target covers (--strict-registry-bindings)]"}, summary(p))
	p = resolveDocs(t, Options{}, append(docs, bareSite(""))...)
	assert.Equal(t, []string{"a/t: web=a/cv"}, summary(p), "anonymous, not with the source's src-pull")

	p = resolveDocs(t, Options{StrictRegistryBindings: true}, append(docs, bareSite(""), regBinding("a", "site", "t", "bare-site"))...)
	assert.Equal(t, []string{"a/t: web=a/cv ERR[Target a/t: release a/cv pulls from the mirror bare.example, which no RegistryBinding of the Target covers (--strict-registry-bindings)]"}, summary(p),
		"a binding of a Registry without targetPullSecretName gives none")
	p = resolveDocs(t, Options{StrictRegistryBindings: true}, append(docs, bareSite(", targetPullSecretName: bare-pull"))...)
	assert.Equal(t, []string{"a/t: web=a/cv(bare-pull)"}, summary(p), "the mirror Registry's own pull secret")
}

// TestMirrorRegistryRef: a mirror whose Registry is missing, or of another
// namespace without a grant for PipelineConfig, fails every Target at the
// PipelineConfig's registryRef.
func TestMirrorRegistryRef(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"missing", mirrorConfig("shared", "registryRef: {name: nowhere}"),
			"Target a/t: mirror registry: Registry shared/nowhere: NotFound"},
		{"not granted", mirrorConfig("ops", "registryRef: {name: site, namespace: shared}"),
			`Target a/t: mirror registry: Registry shared/site: no ReferenceGrant in namespace "shared" allows PipelineConfig from namespace "ops": NotGranted`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := resolveDocs(t, Options{}, site, tc.config, target("a", "t", ""), cvRelease, binding("a", "b", "cv", "a", "t"))
			tr := p.Targets[0]
			require.Len(t, tr.Problems, 1)
			assert.Equal(t, tc.want, tr.Problems[0].Message)
			assert.Equal(t, "spec.registries.mirror.registryRef", tr.Problems[0].Path)
			assert.Positive(t, tr.Problems[0].Line)
		})
	}
}

// TestMirrorOfAHostWithAPort: a source host's port is kept as _PORT
// (package mirror's rule): the copy's repository is a valid name, no
// problem.
func TestMirrorOfAHostWithAPort(t *testing.T) {
	p := resolveDocs(t, Options{}, site, mirrorConfig("shared", "registryRef: {name: site}"), target("a", "t", ""),
		`
kind: Release
metadata: {name: web, namespace: a}
spec: {chart: {repository: "127.0.0.1:5001/charts/web", tag: 1.0.0}}
`, binding("a", "b", "web", "a", "t"))
	tr := p.Targets[0]
	assert.Empty(t, tr.Problems)
	assert.Equal(t, "site.example:5000/mirror/127.0.0.1_5001/charts/web", tr.Releases[0].Chart.Repository)
	assert.Equal(t, "127.0.0.1:5001/charts/web", tr.Releases[0].Chart.Origin.Repository)
}
