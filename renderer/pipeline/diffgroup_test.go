package pipeline

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGroupChanges: changes alike but for their Targets' names and
// namespaces are one group; a name inside a longer name ("edge-1" in
// "edge-10") is not a Target's name, nor is another change.
func TestGroupChanges(t *testing.T) {
	change := func(target, name, diff string) ObjectChange {
		c := ObjectChange{Targets: []string{target}}
		c.Action, c.Kind, c.APIVersion, c.Namespace, c.Name, c.Level = "update", "HelmRelease", "helm.toolkit.fluxcd.io/v2", "flux-system", name, 2
		c.Diff = diff
		return c
	}
	hunk := func(name, url string) string {
		return "--- a/HelmRelease flux-system/" + name + "\n+++ b/HelmRelease flux-system/" + name + "\n   url: " + url + "\n-  replicas: 1\n+  replicas: 2\n"
	}
	groups := GroupChanges([]ObjectChange{
		change("alpha/edge-1", "edge-1-web", hunk("edge-1-web", "oci://r/alpha/web")),
		change("beta/edge-2", "edge-2-web", hunk("edge-2-web", "oci://r/beta/web")),
		change("alpha/edge-10", "edge-1-web0", hunk("edge-1-web0", "oci://r/alpha/web")),
		change("alpha/edge-3", "edge-3-web", hunk("edge-3-web", "oci://r/alpha/web")+"+  more: 1\n"),
	})
	var got [][]string
	for _, g := range groups {
		targets := g.Shown.Targets
		for _, o := range g.Others {
			targets = append(targets, o.Targets...)
		}
		got = append(got, targets)
	}
	assert.Equal(t, [][]string{{"alpha/edge-1", "beta/edge-2"}, {"alpha/edge-10"}, {"alpha/edge-3"}}, got)
	assert.Equal(t, 2, groups[0].Targets())

	// Put out only what all of a change's Targets share.
	key := "alpha/edge-1 in alpha"
	assert.Equal(t, "\x02/\x01 in \x02", alikeKey(key, []string{"alpha/edge-1", "alpha/edge-1"}))
	assert.Equal(t, "\x02/edge-1 in \x02", alikeKey(key, []string{"alpha/edge-1", "alpha/edge-2"}))
	assert.Equal(t, "alpha/\x01 in alpha", alikeKey(key, []string{"alpha/edge-1", "beta/edge-1"}))
	assert.Equal(t, key, alikeKey(key, []string{"alpha/edge-1", "beta/edge-2", "alpha/edge-1"}))
	assert.Equal(t, key, alikeKey(key, nil))

	assert.Equal(t, "<T> a-<T>.b edge-1x edge-10 <T>", replaceToken("edge-1 a-edge-1.b edge-1x edge-10 edge-1", "edge-1", "<T>"))
}

// BenchmarkGroupChangesOnEveryTarget: one change on 100,000 Targets of
// 1,000 namespaces (a Release every Target gets): whether its Targets
// share a name or a namespace is one pass over them.
func BenchmarkGroupChangesOnEveryTarget(b *testing.B) {
	c := ObjectChange{}
	c.Action, c.Kind, c.Name, c.Diff = "update", "HelmRelease", "web", "-  replicas: 1\n+  replicas: 2\n"
	for i := range 100000 {
		c.Targets = append(c.Targets, fmt.Sprintf("ns-%d/edge-%d", i/100, i))
	}
	for b.Loop() {
		if g := GroupChanges([]ObjectChange{c}); g[0].Targets() != 100000 {
			b.Fatal(g[0].Targets())
		}
	}
}
