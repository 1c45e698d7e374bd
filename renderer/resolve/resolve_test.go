package resolve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// base is the fixture every case adds to: a registry and a component version in
// "shared": the registries granted to Targets of "a" and "b", the component
// version to Releases of "a" only.
const base = `
kind: Registry
metadata: {name: render, namespace: shared}
spec: {hostname: render.example, targetPullSecretName: render-pull}
---
kind: Registry
metadata: {name: source, namespace: shared}
spec: {hostname: src.example, targetPullSecretName: src-pull}
---
kind: Registry
metadata: {name: other-source, namespace: shared}
spec: {hostname: src.example, targetPullSecretName: other-pull}
---
kind: Component
metadata: {name: web, namespace: shared}
---
kind: ComponentVersion
metadata: {name: web-1, namespace: shared}
spec:
  componentRef: {name: web}
  tag: "1"
  resources:
    chart: {repository: src.example/charts/web, tag: 1.0.0, helm: {name: web, version: 1.0.0}}
  entrypoint: {resourceName: chart, type: helm}
---
kind: ReferenceGrant
metadata: {name: to-a, namespace: shared}
spec:
  from:
  - {group: solar.opendefense.cloud, kind: Target, namespace: a}
  - {group: solar.opendefense.cloud, kind: Target, namespace: b}
  - {group: solar.opendefense.cloud, kind: Release, namespace: a}
  - {group: solar.opendefense.cloud, kind: RegistryBinding, namespace: a}
  to:
  - {group: solar.opendefense.cloud, kind: Registry}
  - {group: solar.opendefense.cloud, kind: ComponentVersion}
`

// target is a Target of namespace ns with labels, publishing to shared/render.
func target(ns, name, labels string) string {
	return fmt.Sprintf(`
kind: Target
metadata: {name: %s, namespace: %s, labels: {%s}}
spec: {renderRegistryRef: {name: render, namespace: shared}}
`, name, ns, labels)
}

// release is an inline-chart Release; extra is more of its spec.
func release(ns, name, labels, extra string) string {
	return fmt.Sprintf(`
kind: Release
metadata: {name: %s, namespace: %s, labels: {%s}}
spec:
  chart: {repository: src.example/charts/%s, tag: 1.0.0}
  %s
`, name, ns, labels, name, extra)
}

func profile(ns, name, rel, selector string) string {
	return fmt.Sprintf(`
kind: Profile
metadata: {name: %s, namespace: %s}
spec: {releaseRef: {name: %s}%s}
`, name, ns, rel, selector)
}

func binding(ns, name, rel, targetNS, tgt string) string {
	return fmt.Sprintf(`
kind: ReleaseBinding
metadata: {name: %s, namespace: %s}
spec: {releaseRef: {name: %s}, targetRef: {name: %s, namespace: %s}}
`, name, ns, rel, tgt, targetNS)
}

func regBinding(ns, name, tgt, reg string) string {
	return fmt.Sprintf(`
kind: RegistryBinding
metadata: {name: %s, namespace: %s}
spec: {targetRef: {name: %s}, registryRef: {name: %s, namespace: shared}}
`, name, ns, tgt, reg)
}

// summary prints a plan compactly: one line per Target with its releases as
// key=release, its exclusions and its problems.
func summary(p *Plan) []string {
	var out []string
	for _, t := range p.Targets {
		var b strings.Builder
		fmt.Fprintf(&b, "%s/%s:", t.Namespace, t.Name)
		for _, r := range t.Releases {
			fmt.Fprintf(&b, " %s=%s", r.UniqueName, Name(r.Release))
			if r.PullSecret != "" {
				fmt.Fprintf(&b, "(%s)", r.PullSecret)
			}
		}
		for _, e := range t.Excluded {
			fmt.Fprintf(&b, " !%s[%s]", Name(e.Release), e.Reason)
		}
		for _, p := range t.Problems {
			fmt.Fprintf(&b, " ERR[%s]", p.Message)
		}
		out = append(out, b.String())
	}
	return out
}

func resolveDocs(t *testing.T, opts Options, docs ...string) *Plan {
	t.Helper()
	objs, problems := load.Bytes("in.yaml", []byte(strings.Join(append([]string{base}, docs...), "\n---\n")), load.Options{})
	require.Empty(t, problems)
	s, err := model.NewSet(objs)
	require.NoError(t, err)
	p, err := Resolve(s, opts)
	require.NoError(t, err)
	return p
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		docs []string
		want []string
	}{
		{
			name: "profile selector matches its own namespace only",
			docs: []string{
				target("a", "prod", "env: prod"), target("a", "dev", "env: dev"), target("b", "prod", "env: prod"),
				release("a", "web", "", ""), profile("a", "web", "web", ", targetSelector: {matchLabels: {env: prod}}"),
			},
			want: []string{"a/dev:", "a/prod: web=a/web", "b/prod:"},
		},
		{
			name: "empty and missing selectors match every Target of the namespace",
			docs: []string{
				target("a", "t1", "x: y"), target("a", "t2", ""), target("b", "t3", ""),
				release("a", "r1", "", ""), release("a", "r2", "", ""),
				profile("a", "p1", "r1", ", targetSelector: {}"), profile("a", "p2", "r2", ""),
			},
			want: []string{"a/t1: r1=a/r1 r2=a/r2", "a/t2: r1=a/r1 r2=a/r2", "b/t3:"},
		},
		{
			name: "matchExpressions",
			docs: []string{
				target("a", "t1", "tier: device"), target("a", "t2", "tier: device, gone: x"), target("a", "t3", "tier: edge"),
				release("a", "r", "", ""),
				profile("a", "p", "r", ", targetSelector: {matchExpressions: [{key: tier, operator: In, values: [device]}, {key: gone, operator: DoesNotExist}]}"),
			},
			want: []string{"a/t1: r=a/r", "a/t2:", "a/t3:"},
		},
		{
			name: "release binding in its own namespace needs no grant",
			docs: []string{target("a", "t", ""), release("a", "r", "", ""), binding("a", "b", "r", "a", "t")},
			want: []string{"a/t: r=a/r"},
		},
		{
			name: "release binding to another namespace with a grant there",
			docs: []string{
				target("b", "t", ""), release("a", "r", "", ""), binding("a", "b", "r", "b", "t"),
				`kind: ReferenceGrant
metadata: {name: g, namespace: b}
spec:
  from: [{group: solar.opendefense.cloud, kind: ReleaseBinding, namespace: a}]
  to: [{group: solar.opendefense.cloud, kind: Target}]`,
			},
			want: []string{"b/t: r=a/r"},
		},
		{
			name: "release binding to another namespace without a grant binds nothing",
			docs: []string{
				target("b", "t", ""), release("a", "r", "", ""), binding("a", "b", "r", "b", "t"),
				`kind: ReferenceGrant
metadata: {name: g, namespace: b}
spec:
  from: [{group: solar.opendefense.cloud, kind: ReleaseBinding, namespace: other}]
  to: [{group: solar.opendefense.cloud, kind: Target}]`,
			},
			want: []string{"b/t:"},
		},
		{
			name: "component version across namespaces with a grant; uniqueName from the component",
			docs: []string{
				target("a", "t", ""), profile("a", "p", "r", ""),
				`kind: Release
metadata: {name: r, namespace: a}
spec: {componentVersionRef: {name: web-1, namespace: shared}}`,
			},
			want: []string{"a/t: web=a/r"},
		},
		{
			name: "component version across namespaces without a grant fails closed",
			docs: []string{
				target("a", "t", ""), release("a", "ok", "", ""), profile("a", "ok", "ok", ""),
				`kind: Release
metadata: {name: r, namespace: c}
spec: {componentVersionRef: {name: web-1, namespace: shared}}`,
				profile("c", "p", "r", ""), target("c", "u", ""),
			},
			want: []string{
				"a/t: ok=a/ok",
				"c/u: ERR[Target c/u: render registry: Registry shared/render: no ReferenceGrant in namespace \"shared\" allows Target from namespace \"c\": NotGranted] " +
					"ERR[Release c/r for Target c/u: ComponentVersion shared/web-1: no ReferenceGrant in namespace \"shared\" allows Release from namespace \"c\": NotGranted]",
			},
		},
		{
			name: "uniqueName: highest priority wins, explicit uniqueName over component name",
			docs: []string{
				target("a", "t", ""),
				release("a", "low", "", "uniqueName: web\n  priority: 1"), release("a", "high", "", "uniqueName: web\n  priority: 5"),
				`kind: Release
metadata: {name: cv, namespace: a}
spec: {componentVersionRef: {name: web-1, namespace: shared}, priority: 3}`,
				profile("a", "p1", "low", ""), profile("a", "p2", "high", ""), profile("a", "p3", "cv", ""),
			},
			want: []string{"a/t: web=a/high " +
				"!a/cv[uniqueName \"web\" is taken by a/high (priority 5, this release has 3)] " +
				"!a/low[uniqueName \"web\" is taken by a/high (priority 5, this release has 1)]"},
		},
		{
			name: "uniqueName tie goes to the lowest namespace/name",
			docs: []string{
				target("a", "t", ""),
				release("a", "zeta", "", "uniqueName: web"), release("a", "alpha", "", "uniqueName: web"),
				profile("a", "p1", "zeta", ""), binding("a", "b", "alpha", "a", "t"),
			},
			want: []string{"a/t: web=a/alpha !a/zeta[uniqueName \"web\" is taken by a/alpha (priority 0, this release has 0)]"},
		},
		{
			name: "uniqueName defaults to the release name for inline charts",
			docs: []string{target("a", "t", ""), release("a", "one", "", ""), release("a", "two", "", ""), profile("a", "p1", "one", ""), profile("a", "p2", "two", "")},
			want: []string{"a/t: one=a/one two=a/two"},
		},
		{
			name: "a release bound twice is taken once",
			docs: []string{target("a", "t", ""), release("a", "r", "", ""), profile("a", "p", "r", ""), binding("a", "b", "r", "a", "t")},
			want: []string{"a/t: r=a/r"},
		},
		{
			name: "antiAffinity excludes a release whose selector matches one taken before it",
			docs: []string{
				target("a", "t", ""),
				release("a", "canary", "track: canary", "priority: 20"),
				release("a", "metrics", "", "antiAffinity: {matchLabels: {track: canary}}"),
				release("a", "other", "", "antiAffinity: {matchLabels: {track: stable}}"),
				profile("a", "p1", "canary", ""), profile("a", "p2", "metrics", ""), profile("a", "p3", "other", ""),
			},
			want: []string{"a/t: canary=a/canary other=a/other !a/metrics[antiAffinity matches the labels of a/canary, taken before it]"},
		},
		{
			name: "antiAffinity only looks at releases taken before",
			docs: []string{
				target("a", "t", ""),
				release("a", "first", "", "priority: 9\n  antiAffinity: {matchLabels: {x: y}}"),
				release("a", "second", "x: y", ""),
				profile("a", "p1", "first", ""), profile("a", "p2", "second", ""),
			},
			want: []string{"a/t: first=a/first second=a/second"},
		},
		{
			name: "an empty antiAffinity matches every release taken before it",
			docs: []string{
				target("a", "t", ""),
				release("a", "first", "", "priority: 9"), release("a", "loner", "", "antiAffinity: {}"),
				profile("a", "p1", "first", ""), profile("a", "p2", "loner", ""),
			},
			want: []string{"a/t: first=a/first !a/loner[antiAffinity matches the labels of a/first, taken before it]"},
		},
		{
			name: "without a registry binding pulls are anonymous",
			docs: []string{
				target("a", "t", ""),
				`kind: Release
metadata: {name: r, namespace: a}
spec: {chart: {repository: elsewhere.example/charts/r, tag: 1.0.0}}`,
				profile("a", "p", "r", ""),
			},
			want: []string{"a/t: r=a/r"},
		},
		{
			name: "strict registry bindings: a registry without a binding is an error",
			opts: Options{StrictRegistryBindings: true},
			docs: []string{
				target("a", "t", ""), target("a", "u", ""), release("a", "r", "", ""), profile("a", "p", "r", ""),
				regBinding("a", "u-src", "u", "source"),
			},
			want: []string{
				"a/t: r=a/r ERR[Target a/t: release a/r pulls from src.example, which no RegistryBinding of the Target covers (--strict-registry-bindings)]",
				"a/u: r=a/r(src-pull)",
			},
		},
		{
			name: "two pull secrets for one hostname is an error",
			docs: []string{
				target("a", "t", ""), release("a", "r", "", ""), profile("a", "p", "r", ""),
				regBinding("a", "one", "t", "source"), regBinding("a", "two", "t", "other-source"),
			},
			want: []string{"a/t: r=a/r(src-pull) ERR[Target a/t gets two pull secrets for src.example: \"src-pull\" from RegistryBinding a/one and \"other-pull\" from RegistryBinding a/two]"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, summary(resolveDocs(t, tc.opts, tc.docs...)))
		})
	}
}

func TestValuesTemplate(t *testing.T) {
	cv := func(tmpl string) string {
		return fmt.Sprintf(`
kind: ComponentVersion
metadata: {name: tmpl, namespace: a}
spec:
  componentRef: {name: web}
  tag: "1"
  resources:
    chart:
      repository: src.example/charts/web
      tag: 1.0.0
      helm: {name: web, version: 1.0.0, valuesTemplate: %q}
  entrypoint: {resourceName: chart, type: helm}
---
kind: Component
metadata: {name: web, namespace: a}
---
kind: Release
metadata: {name: r, namespace: a}
spec: {componentVersionRef: {name: tmpl}}
`, tmpl) + "---" + profile("a", "p", "r", "")
	}
	p := resolveDocs(t, Options{}, target("a", "t", "site: north"), cv("site: {{ .Target.Labels.site }}\nname: {{ .Target.Name }}/{{ .Release.Name }}"))
	require.Len(t, p.Targets[0].Releases, 1)
	assert.Equal(t, "site: north\nname: t/r", p.Targets[0].Releases[0].RenderedValues)
	assert.Empty(t, p.Targets[0].Problems)

	p = resolveDocs(t, Options{}, target("a", "t", ""), cv("x: {{ .Target.Userdata.missing }}"))
	require.Len(t, p.Targets[0].Problems, 1)
	pr := p.Targets[0].Problems[0]
	assert.Equal(t, `spec.resources.chart.helm.valuesTemplate`, pr.Path)
	assert.Contains(t, pr.Message, `rendering for Target a/t:`)
	assert.Contains(t, pr.Message, `map has no entry for key "missing"`)
	assert.Positive(t, pr.Line)
}
