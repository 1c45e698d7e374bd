package validate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOverlappingRollouts: two Rollouts of one namespace that both match
// Targets are reported once, at the one whose name sorts second, naming the
// first Target and counting the others; Rollouts of other namespaces and
// Targets that only one matches are no problem.
func TestOverlappingRollouts(t *testing.T) {
	target := func(name, ns, labels string) string {
		return head + "kind: Target\nmetadata: {name: " + name + ", namespace: " + ns + ", labels: " + labels + "}\nspec: {renderRegistryRef: {name: r}}\n---\n"
	}
	src := target("a", "alpha", "{tier: edge}") + target("b", "alpha", "{tier: edge}") + target("c", "alpha", "{tier: edge}") +
		target("d", "alpha", "{tier: core}") + target("e", "beta", "{tier: edge}") +
		head + "kind: Registry\nmetadata: {name: r, namespace: alpha}\nspec: {hostname: registry.example.com}\n---\n" +
		head + "kind: Registry\nmetadata: {name: r, namespace: beta}\nspec: {hostname: registry.example.com}\n---\n" +
		head + "kind: Rollout\nmetadata: {name: all, namespace: alpha}\nspec: {waves: [{name: w}]}\n---\n" +
		head + "kind: Rollout\nmetadata: {name: edge, namespace: alpha}\nspec: {selector: {matchLabels: {tier: edge}}, waves: [{name: w}]}\n---\n" +
		head + "kind: Rollout\nmetadata: {name: core, namespace: beta}\nspec: {selector: {matchLabels: {tier: core}}, waves: [{name: w}]}\n---\n" +
		head + "kind: Rollout\nmetadata: {name: edge, namespace: beta}\nspec: {selector: {matchLabels: {tier: edge}}, waves: [{name: w}]}\n"
	var got []string
	for _, p := range vet(t, Options{}, src) {
		if p != "" && !strings.Contains(p, "gets no release") {
			got = append(got, p)
		}
	}
	assert.Equal(t, []string{
		"in.yaml:44: spec.selector: Rollouts alpha/all (in.yaml:36) and alpha/edge (in.yaml:41) both match Target alpha/a (in.yaml:1): " +
			"a Target is governed by at most one Rollout; they both match 2 more Targets",
	}, got)
}
