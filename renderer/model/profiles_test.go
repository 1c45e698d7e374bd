package model

import (
	"testing"

	"github.com/solar-pipeline/solar/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProfileAcrossNamespaces: a Profile matches a Target of another
// namespace exactly where ReferenceGrants there allow both Profile and
// ReleaseBinding from the Profile's namespace to that Target, as SolAr's
// controllers do (operator manual: Profile in k8s-cluster-provider, Target in
// k8s-cluster-user); every other grant fails closed.
func TestProfileAcrossNamespaces(t *testing.T) {
	const objs = `kind: Target
metadata: {name: cluster-01, namespace: user, labels: {env: production}}
---
kind: Target
metadata: {name: cluster-02, namespace: user, labels: {env: staging}}
---
kind: Release
metadata: {name: ocm-demo, namespace: provider}
---
kind: Profile
metadata: {name: production, namespace: provider}
spec:
  releaseRef: {name: ocm-demo}
  targetSelector: {matchLabels: {env: production}}
`
	grant := func(ns, to string, from ...string) string {
		out := "---\nkind: ReferenceGrant\nmetadata: {name: g-" + from[0] + ", namespace: " + ns + "}\nspec:\n  from:\n"
		for _, kind := range from {
			out += "  - {group: solar.opendefense.cloud, kind: " + kind + ", namespace: provider}\n"
		}
		return out + "  to: [" + to + "]\n"
	}
	target := "{group: solar.opendefense.cloud, kind: Target}"
	for name, tc := range map[string]struct {
		grants string
		want   []string
		// missing is what ProfileGrantsMissing names for cluster-01.
		missing []string
	}{
		"both entries in one grant": {grants: grant("user", target, "Profile", "ReleaseBinding"),
			want: []string{"user/cluster-01 <- ocm-demo via Profile provider/production"}},
		"both entries in two grants": {grants: grant("user", target, "Profile") + grant("user", target, "ReleaseBinding"),
			want: []string{"user/cluster-01 <- ocm-demo via Profile provider/production"}},
		"no grant":            {missing: []string{api.KindProfile, api.KindReleaseBinding}},
		"only Profile":        {grants: grant("user", target, "Profile"), missing: []string{api.KindReleaseBinding}},
		"only ReleaseBinding": {grants: grant("user", target, "ReleaseBinding"), missing: []string{api.KindProfile}},
		"in the Profile's ns": {grants: grant("provider", target, "Profile", "ReleaseBinding"), missing: []string{api.KindProfile, api.KindReleaseBinding}},
		"to another kind":     {grants: grant("user", "{group: solar.opendefense.cloud, kind: Registry}", "Profile", "ReleaseBinding"), missing: []string{api.KindProfile, api.KindReleaseBinding}},
		"to another Target":   {grants: grant("user", "{group: solar.opendefense.cloud, kind: Target, name: cluster-02}", "Profile", "ReleaseBinding"), missing: []string{api.KindProfile, api.KindReleaseBinding}},
		"to this Target by name": {grants: grant("user", "{group: solar.opendefense.cloud, kind: Target, name: cluster-01}", "Profile", "ReleaseBinding"),
			want: []string{"user/cluster-01 <- ocm-demo via Profile provider/production"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := set(t, objs+tc.grants)
			bs, err := s.Bindings()
			require.NoError(t, err)
			var got []string
			for _, b := range bs {
				got = append(got, b.Target.Namespace+"/"+b.Target.Name+" <- "+b.Release.Name+" via "+b.Via.String())
			}
			assert.Equal(t, tc.want, got, "the selector still decides: cluster-02 (staging) is never matched")
			assert.Equal(t, tc.missing, s.ProfileGrantsMissing("provider", Get[Target](s, api.KindTarget, "user", "cluster-01")))
		})
	}
}
