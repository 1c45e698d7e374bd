package resolve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dependsOn is each selected release's DependsOn, by uniqueName, and the
// problems' "LINE: PATH: message", of the only Target.
func dependsOn(t *testing.T, p *Plan) (map[string][]string, []string) {
	t.Helper()
	require.Len(t, p.Targets, 1)
	deps := map[string][]string{}
	for _, r := range p.Targets[0].Releases {
		deps[r.UniqueName] = []string{}
		for _, d := range r.DependsOn {
			deps[r.UniqueName] = append(deps[r.UniqueName], d.UniqueName)
		}
	}
	var problems []string
	for _, pr := range p.Targets[0].Problems.Sorted() {
		problems = append(problems, pr.String())
	}
	return deps, problems
}

func TestDependencies(t *testing.T) {
	t.Run("a Release's and its ComponentVersion's dependencies, by uniqueName", func(t *testing.T) {
		p := resolveDocs(t, Options{}, target("a", "t", ""),
			release("a", "crds", "", ""),
			release("a", "db", "", "uniqueName: database"),
			`
kind: Release
metadata: {name: web, namespace: a}
spec:
  componentVersionRef: {name: web-1, namespace: shared}
  dependencies: [{uniqueName: database}, {uniqueName: crds}, {uniqueName: database}]
`,
			profile("a", "p1", "crds", ""), profile("a", "p2", "db", ""), profile("a", "p3", "web", ""))
		deps, problems := dependsOn(t, p)
		assert.Empty(t, problems)
		assert.Equal(t, map[string][]string{"crds": {}, "database": {}, "web": {"crds", "database"}}, deps)
	})

	t.Run("a ComponentVersion's dependency names a component: the release of that uniqueName", func(t *testing.T) {
		p := resolveDocs(t, Options{}, target("a", "t", ""),
			`
kind: ComponentVersion
metadata: {name: shop-1, namespace: shared}
spec:
  componentRef: {name: shop}
  tag: "1"
  resources:
    chart: {repository: src.example/charts/shop, tag: 1.0.0}
  entrypoint: {resourceName: chart, type: helm}
  dependencies:
    - {componentRef: {name: web}, version: ">=1.0.0", clusterWide: true}
`,
			`
kind: Release
metadata: {name: shop, namespace: a}
spec: {componentVersionRef: {name: shop-1, namespace: shared}}
`,
			`
kind: Release
metadata: {name: web, namespace: a}
spec: {componentVersionRef: {name: web-1, namespace: shared}}
`,
			profile("a", "p1", "shop", ""), profile("a", "p2", "web", ""))
		deps, problems := dependsOn(t, p)
		assert.Empty(t, problems)
		assert.Equal(t, map[string][]string{"shop": {"web"}, "web": {}}, deps)
	})

}

// TestDependencyProblems: cycles, unknown and excluded dependencies are
// FILE:LINE errors, all at once.
func TestDependencyProblems(t *testing.T) {
	t.Run("a cycle of three is one error naming each step's file and line", func(t *testing.T) {
		p := resolveDocs(t, Options{}, target("a", "t", ""),
			release("a", "x", "", "dependencies: [{uniqueName: y}]"),
			release("a", "y", "", "dependencies: [{uniqueName: z}]"),
			release("a", "z", "", "dependencies: [{uniqueName: x}]"),
			release("a", "free", "", "dependencies: [{uniqueName: x}]"),
			profile("a", "p1", "x", ""), profile("a", "p2", "y", ""), profile("a", "p3", "z", ""), profile("a", "p4", "free", ""))
		_, problems := dependsOn(t, p)
		require.Len(t, problems, 1, "%v", problems)
		assert.Regexp(t, `^in.yaml:\d+: spec.dependencies\[0\].uniqueName: dependency cycle \(each at the line that names the next\): `+
			`a/x \(in.yaml:\d+\) -> a/y \(in.yaml:\d+\) -> a/z \(in.yaml:\d+\) -> a/x; remove one of these dependencies$`, problems[0])
	})

	t.Run("a release that depends on itself", func(t *testing.T) {
		p := resolveDocs(t, Options{}, target("a", "t", ""),
			release("a", "x", "", "dependencies: [{uniqueName: x}]"), profile("a", "p1", "x", ""))
		_, problems := dependsOn(t, p)
		require.Len(t, problems, 1)
		assert.Contains(t, problems[0], "dependency cycle (each at the line that names the next): a/x (in.yaml:")
	})

	t.Run("an unknown uniqueName and an excluded one, each with its reasons, all at once", func(t *testing.T) {
		p := resolveDocs(t, Options{}, target("a", "t", ""),
			release("a", "db-big", "tier: db", "uniqueName: db\n  priority: 10\n  antiAffinity: {matchLabels: {tier: cache}}"),
			release("a", "db-small", "", "uniqueName: db"),
			release("a", "cache", "tier: cache", "priority: 20"),
			release("a", "app", "", "dependencies: [{uniqueName: db}, {uniqueName: nosuch}]"),
			profile("a", "p1", "db-big", ""), profile("a", "p2", "db-small", ""), profile("a", "p3", "cache", ""), profile("a", "p4", "app", ""))
		deps, problems := dependsOn(t, p)
		assert.Equal(t, map[string][]string{"app": {}, "cache": {}}, deps)
		require.Len(t, problems, 2, "%v", problems)
		assert.Regexp(t, `^in.yaml:\d+: spec.dependencies\[0\].uniqueName: Release a/app for Target a/t depends on "db", which the Target does not get: `+
			`a/db-small is excluded: uniqueName "db" is taken by a/db-big \(priority 10, this release has 0\); `+
			`a/db-big is excluded: antiAffinity matches the labels of a/cache, taken before it$`, problems[0])
		assert.Regexp(t, `^in.yaml:\d+: spec.dependencies\[1\].uniqueName: Release a/app for Target a/t depends on "nosuch", the uniqueName of no release bound to the Target$`, problems[1])
	})
}
