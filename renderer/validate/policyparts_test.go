package validate

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/policies"
	"github.com/solar-pipeline/solar/renderer/load"
)

// TestEmbeddedPolicyPartsFindWhatTheWholeFinds: the embedded policies
// evaluated a namespace at a time find exactly what they find on the whole
// input, with every rule firing: the PipelineConfig's bounds, registries
// off the allow-list and insecure, and agent credentials shared in a
// namespace whose Targets are bound to an agent Release of another
// namespace (beta's Targets, alpha's Release: the part of beta must be
// given alpha's Release).
func TestEmbeddedPolicyPartsFindWhatTheWholeFinds(t *testing.T) {
	objs, problems, _ := load.Paths([]string{"../../examples"}, load.Options{})
	require.Empty(t, problems)
	extra := head + "kind: PipelineConfig\nmetadata: {name: c, namespace: alpha}\n" +
		"spec: {agent: {tokenTTL: 9m}, flux: {timeout: 2h}, registries: {allowedHostnames: [registry.example.com]}}\n"
	for _, t := range []string{"plant-1", "plant-2"} {
		extra += "---\n" + head + "kind: ReleaseBinding\nmetadata: {name: " + t + "-agent, namespace: alpha}\n" +
			"spec: {targetRef: {name: " + t + ", namespace: beta}, releaseRef: {name: solar-agent}}\n"
	}
	for i := range 6 {
		extra += fmt.Sprintf("---\n"+head+"kind: Registry\nmetadata: {name: r, namespace: n%d}\nspec: {hostname: \"other-%d.local:5000\", plainHTTP: true}\n", i, i)
	}
	more, problems := load.Bytes("extra.yaml", []byte(extra), load.Options{})
	require.Empty(t, problems)
	objs = append(objs, more...)

	vetWith := func(part int) []string {
		defer func(was int) { policyPart = was }(policyPart)
		policyPart = part
		v, err := New(Options{})
		require.NoError(t, err)
		_, problems := v.Validate(objs)
		var out []string
		for _, p := range problems {
			out = append(out, p.String())
		}
		return out
	}
	whole := vetWith(1 << 30)
	// Every rule of the embedded policies fires here: a new rule must be
	// made to, and so shows whether it holds a namespace at a time.
	files, err := fs.Glob(policies.FS, "*.cue")
	require.NoError(t, err)
	rule := regexp.MustCompile(`(?m)^\s*(?:deny|warn): "([^"]+)"`)
	var rules []string
	for _, f := range files {
		b, err := fs.ReadFile(policies.FS, f)
		require.NoError(t, err)
		for _, m := range rule.FindAllStringSubmatch(string(b), -1) {
			rules = append(rules, "(policy "+m[1]+")")
		}
	}
	require.NotEmpty(t, rules)
	for _, want := range append(rules, "Targets plant-1, plant-2 in namespace beta all get agent credentials") {
		assert.Contains(t, strings.Join(whole, "\n"), want)
	}
	assert.Equal(t, whole, vetWith(1), "a namespace at a time")
	assert.Equal(t, whole, vetWith(3), "a few objects at a time")
}
