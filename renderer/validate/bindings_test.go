package validate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// objs joins documents of kind: and the fields after it, each with head.
func objs(docs ...string) string {
	return head + strings.Join(docs, "---\n"+head)
}

const (
	registry    = "kind: Registry\nmetadata: {name: r, namespace: user}\nspec: {hostname: registry.example.com}\n"
	cluster01   = "kind: Target\nmetadata:\n  name: cluster-01\n  namespace: user\n  labels: {env: production}\nspec: {renderRegistryRef: {name: r}}\n"
	release     = "kind: Release\nmetadata: {name: ocm-demo, namespace: provider}\nspec: {chart: {repository: ghcr.io/org/ocm-demo, tag: \"1.0.0\"}}\n"
	production  = "kind: Profile\nmetadata: {name: production, namespace: provider}\nspec:\n  releaseRef: {name: ocm-demo}\n  targetSelector: {matchLabels: {env: production}}\n"
	userGrant   = "kind: ReferenceGrant\nmetadata: {name: g, namespace: user}\nspec:\n  from:\n  - {group: solar.opendefense.cloud, kind: Profile, namespace: provider}\n  - {group: solar.opendefense.cloud, kind: ReleaseBinding, namespace: provider}\n  to: [{group: solar.opendefense.cloud, kind: Target}]\n"
	profileOnly = "kind: ReferenceGrant\nmetadata: {name: g, namespace: user}\nspec:\n  from: [{group: solar.opendefense.cloud, kind: Profile, namespace: provider}]\n  to: [{group: solar.opendefense.cloud, kind: Target}]\n"
)

// TestUnboundWarnings: a Profile that matches no Target and a Target that
// gets no release are warnings that say why when a grant is missing, and
// errors with Strict; a cross-namespace Profile with its grant binds and
// says nothing.
func TestUnboundWarnings(t *testing.T) {
	noGrant := []string{
		"in.yaml:9: metadata.name: warning: Target user/cluster-01 gets no release: no Profile or ReleaseBinding binds one to it, so its bootstrap chart installs nothing; " +
			"Profile provider/production matches its labels but no ReferenceGrant in user allows Profile from provider (add one: from Profile and ReleaseBinding, to Target)",
		"in.yaml:24: spec.targetSelector: warning: Profile provider/production matches no Target; " +
			"Target user/cluster-01 has matching labels but no ReferenceGrant in user allows Profile from provider (add one: from Profile and ReleaseBinding, to Target)",
	}
	assert.Equal(t, noGrant, vet(t, Options{}, objs(registry, cluster01, release, production)))

	var strict []string
	for _, w := range noGrant {
		strict = append(strict, strings.Replace(w, "warning: ", "", 1)+" (--strict)")
	}
	assert.Equal(t, strict, vet(t, Options{Strict: true}, objs(registry, cluster01, release, production)))

	assert.Equal(t, []string{
		"in.yaml:9: metadata.name: warning: Target user/cluster-01 gets no release: no Profile or ReleaseBinding binds one to it, so its bootstrap chart installs nothing; " +
			"Profile provider/production matches its labels but no ReferenceGrant in user allows ReleaseBinding from provider (add it to the grant's from: SolAr needs both Profile and ReleaseBinding)",
		"in.yaml:24: spec.targetSelector: warning: Profile provider/production matches no Target; " +
			"Target user/cluster-01 has matching labels but no ReferenceGrant in user allows ReleaseBinding from provider (add it to the grant's from: SolAr needs both Profile and ReleaseBinding)",
	}, vet(t, Options{}, objs(registry, cluster01, release, production, profileOnly)), "the entry SolAr's guide says is easily forgotten")

	assert.Empty(t, vet(t, Options{Strict: true}, objs(registry, cluster01, release, production, userGrant)))
}

// TestUnboundWithoutGrants: without a grant to blame, the warnings say what
// there is.
func TestUnboundWithoutGrants(t *testing.T) {
	staging := strings.Replace(production, "env: production", "env: staging", 1)
	assert.Equal(t, []string{
		"in.yaml:9: metadata.name: warning: Target user/cluster-01 gets no release: no Profile or ReleaseBinding binds one to it, so its bootstrap chart installs nothing",
		"in.yaml:24: spec.targetSelector: warning: Profile provider/production matches no Target: no Target has labels that match env=staging",
	}, vet(t, Options{}, objs(registry, cluster01, release, staging)))

	all := "kind: Profile\nmetadata: {name: all, namespace: provider}\nspec: {releaseRef: {name: ocm-demo}}\n"
	assert.Equal(t, []string{
		"in.yaml:8: metadata.name: warning: Profile provider/all matches no Target: there is no Target",
	}, vet(t, Options{}, objs(release, all)))
}

// TestUnboundNoCascade: where another problem explains it, a Target or
// Profile that binds nothing gets no warning of its own.
func TestUnboundNoCascade(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		want string
	}{
		"the Target fails its schema": {objs(registry, strings.Replace(cluster01, "cluster-01", "Cluster_01", 1), release, production),
			"in.yaml:9:3: metadata.name: \"Cluster_01\" must be a DNS label"},
		"its ReleaseBinding is not granted": {objs(registry, cluster01, release,
			"kind: ReleaseBinding\nmetadata: {name: b, namespace: provider}\nspec: {targetRef: {name: cluster-01, namespace: user}, releaseRef: {name: ocm-demo}}\n"),
			"in.yaml:22: spec.targetRef: refers across namespaces without a grant"},
		"its render registry is missing": {objs(cluster01),
			"in.yaml:7: spec.renderRegistryRef: refers to a missing Registry"},
		"its Profile's Release is missing": {objs(registry, cluster01, "kind: Profile\nmetadata: {name: p, namespace: user}\nspec: {releaseRef: {name: missing}}\n"),
			"in.yaml:17: spec.releaseRef: refers to a missing Release"},
	} {
		got := vet(t, Options{Strict: true}, tc.src)
		for _, p := range got {
			assert.NotContains(t, p, "--strict", name)
		}
		if assert.NotEmpty(t, got, name) {
			assert.Contains(t, got[0], tc.want, name)
		}
	}
}
