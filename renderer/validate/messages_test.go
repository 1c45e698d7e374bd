package validate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSchemaErrorsInPlainWords: the schema errors users met, each a sentence
// naming the field, the value, what is wanted and the likely fix, at the
// field's line and column, instead of CUE's text.
func TestSchemaErrorsInPlainWords(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		want []string
	}{
		"string for an integer": {head + "kind: Release\nmetadata: {name: r}\nspec:\n  componentVersionRef: {name: cv}\n  priority: high\n",
			[]string{`in.yaml:6:3: spec.priority: "high" is a string; want an integer (int32), e.g. priority: 10`}},
		"empty reference": {head + "kind: Profile\nmetadata: {name: p}\nspec:\n  releaseRef:\n",
			[]string{`in.yaml:5:3: spec.releaseRef: is empty; want an object with name (releaseRef: {name: my-release})`}},
		"wrong apiVersion": {"apiVersion: solar.opendefense.cloud/v1alpha2\nkind: Registry\nmetadata: {name: r}\nspec: {hostname: registry.example.com}\n",
			[]string{`in.yaml:1:1: apiVersion: solar.opendefense.cloud/v1alpha2 is not served; want solar.opendefense.cloud/v1alpha1`}},
		"unquoted version": {head + "kind: ComponentVersion\nmetadata: {name: cv}\nspec:\n  componentRef: {name: c}\n  tag: 1.10\n" +
			"  resources:\n    chart: {repository: ghcr.io/org/chart, tag: 2.0}\n  entrypoint: {resourceName: chart, type: helm}\n",
			[]string{
				`in.yaml:6:3: spec.tag: 1.10 is a number (read as 1.1); quote it: tag: "1.10"`,
				`in.yaml:8:44: spec.resources.chart.tag: 2.0 is a number (read as 2); quote it: tag: "2.0"`,
			}},
		"misspelled kind": {head + "kind: Relase\nmetadata: {name: r}\nspec: {}\n",
			[]string{`in.yaml:2:1: kind: unknown kind "Relase"; did you mean Release?`}},
		"misspelled field": {head + "kind: Registry\nmetadata: {name: r}\nspec:\n  hostnmae: registry.example.com\n",
			[]string{`in.yaml:5:3: spec.hostnmae: unknown field; did you mean hostname?`}},
		"unknown field beside another error": {head + "kind: Registry\nmetadata: {name: r}\nspec:\n  hostname: registry.example.com\n  plainHttp: true\n  scanInterval: 1 day\n",
			[]string{
				`in.yaml:6:3: spec.plainHttp: unknown field; did you mean plainHTTP?`,
				`in.yaml:7:3: spec.scanInterval: "1 day" is not a duration; want a Go duration such as 90s, 10m or 24h`,
			}},
		"missing apiVersion": {"kind: Registry\nmetadata: {name: r}\nspec: {hostname: registry.example.com}\n",
			[]string{`in.yaml:1: apiVersion: is required but missing; want apiVersion: solar.opendefense.cloud/v1alpha1`}},
		"number in a list of strings": {head + "kind: DeviceUpgrade\nmetadata: {name: u}\nspec:\n  agentVersion: \"1.4.0\"\n  artifact: fleet/agent:1.4.0\n  deviceIds: [dev-1, 1.10]\n",
			[]string{`in.yaml:7:22: spec.deviceIds[1]: 1.10 is a number (read as 1.1); quote it: "1.10"`}},
		"number for a label value": {head + "kind: Target\nmetadata:\n  name: t\n  labels: {\"app.kubernetes.io/version\": 2.0}\nspec: {renderRegistryRef: {name: r}}\n",
			[]string{`in.yaml:5:12: metadata.labels["app.kubernetes.io/version"]: 2.0 is a number (read as 2); quote it: app.kubernetes.io/version: "2.0"`}},
		"list for an object": {head + "kind: Profile\nmetadata: {name: p}\nspec:\n  releaseRef: [r]\n",
			[]string{`in.yaml:5:3: spec.releaseRef: is a list; want an object with name (releaseRef: {name: my-release})`}},
		"unknown field far from any": {head + "kind: Registry\nmetadata: {name: r}\nspec:\n  hostname: registry.example.com\n  colour: blue\n",
			[]string{`in.yaml:6:3: spec.colour: unknown field`}},
		// SolAr's test/fixtures/e2e/cross-ns-cv-grant.yaml: a placeholder
		// namespace in the one entry of from.
		"invalid list entry": {head + "kind: ReferenceGrant\nmetadata: {name: g}\nspec:\n  from:\n    - group: solar.opendefense.cloud\n" +
			"      kind: Release\n      namespace: RELEASE_NAMESPACE\n  to:\n    - group: solar.opendefense.cloud\n      kind: ComponentVersion\n",
			[]string{`in.yaml:8:7: spec.from[0].namespace: "RELEASE_NAMESPACE" must be a DNS label: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit`}},
		"empty list": {head + "kind: ReferenceGrant\nmetadata: {name: g}\nspec:\n  from: []\n  to: [{group: solar.opendefense.cloud, kind: Release}]\n",
			[]string{`in.yaml:5:3: spec.from: needs at least one entry`}},
		"too many entries": {head + "kind: Rollout\nmetadata: {name: r}\nspec:\n  waves: [" + strings.Repeat("{name: w}, ", 20) + "{name: w}]\n",
			[]string{`in.yaml:5:3: spec.waves: has 21 entries; want at most 20`}},
		"duration": {head + "kind: PipelineConfig\nmetadata: {name: c}\nspec:\n  agent: {tokenTTL: 1 day}\n",
			[]string{`in.yaml:5:11: spec.agent.tokenTTL: "1 day" is not a duration; want a Go duration such as 90s, 10m or 24h`}},
		"not one of": {head + "kind: TargetReport\nmetadata: {name: t}\nspec:\n  releases: [{name: a, namespace: b, phase: Sleeping}]\n",
			[]string{`in.yaml:5:38: spec.releases[0].phase: "Sleeping" is not one of Pending, Progressing, Ready, Degraded, Failed`}},
		"unknown shape keeps CUE's text": {head + "kind: TargetReport\nmetadata: {name: t}\nspec:\n  releases: [{name: a, namespace: b, phase: Ready, revision: " + strings.Repeat("x", 300) + "}]\n",
			[]string{`in.yaml:5:52: spec.releases[0].revision: invalid value "` + strings.Repeat("x", 300) + `" (does not satisfy strings.MaxRunes(256))`}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, vet(t, Options{}, tc.src))
		})
	}
}

func TestClosest(t *testing.T) {
	names := []string{"hostname", "plainHTTP", "solarSecretRef", "targetPullSecretName"}
	for in, want := range map[string]string{
		"hostnmae": "hostname", "plainHttp": "plainHTTP", "hostnam": "hostname",
		"solarSecret": "", "colour": "", "targetPullSecret": "", "host": "",
	} {
		assert.Equal(t, want, closest(in, names), in)
	}
}
