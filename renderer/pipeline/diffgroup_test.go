package pipeline

import (
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

	assert.Equal(t, "<T> a-<T>.b edge-1x edge-10 <T>", replaceToken("edge-1 a-edge-1.b edge-1x edge-10 edge-1", "edge-1", "<T>"))
}
