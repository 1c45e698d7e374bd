package validate

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/policies"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
)

const head = "apiVersion: solar.opendefense.cloud/v1alpha1\n"

func vet(t *testing.T, opts Options, src string) []string {
	t.Helper()
	v, err := New(opts)
	require.NoError(t, err)
	objs, problems := load.Bytes("in.yaml", []byte(src), load.Options{})
	require.Empty(t, problems)
	_, problems = v.Validate(objs)
	var out []string
	for _, p := range problems {
		out = append(out, p.String())
	}
	return out
}

func TestExamplesWarnOnSharedAgentNamespace(t *testing.T) {
	v, err := New(Options{})
	require.NoError(t, err)
	objs, problems, _ := load.Paths([]string{"../../examples"}, load.Options{})
	require.Empty(t, problems)
	set, problems := v.Validate(objs)
	require.Len(t, problems, 1, "%v", problems)
	assert.Equal(t, diag.Warning, problems[0].Severity)
	assert.Contains(t, problems[0].Message, "Targets edge-1, edge-2 in namespace alpha all get agent credentials")
	assert.Len(t, set.Targets, 4)

	bindings, err := set.Bindings()
	require.NoError(t, err)
	var got []string
	for _, b := range bindings {
		got = append(got, b.Target.Namespace+"/"+b.Target.Name+" <- "+b.Release.Namespace+"/"+b.Release.Name+" via "+b.Via.String())
	}
	assert.Equal(t, []string{
		"alpha/edge-1 <- alpha/metrics via Profile alpha/metrics-prod",
		"alpha/edge-1 <- alpha/podinfo-stable via Profile alpha/podinfo-eu",
		"alpha/edge-1 <- alpha/solar-agent via Profile alpha/agent",
		"alpha/edge-2 <- alpha/metrics via ReleaseBinding alpha/edge-2-metrics",
		"alpha/edge-2 <- alpha/podinfo-canary via ReleaseBinding alpha/edge-2-canary",
		"alpha/edge-2 <- alpha/podinfo-stable via Profile alpha/podinfo-eu",
		"alpha/edge-2 <- alpha/solar-agent via Profile alpha/agent",
		"beta/plant-1 <- alpha/metrics via ReleaseBinding alpha/plant-1-metrics",
		"beta/plant-1 <- beta/podinfo via Profile beta/devices",
		"beta/plant-2 <- beta/podinfo via Profile beta/devices",
	}, got, "Profiles match Targets of another namespace only where a grant there allows them (none does here); the empty selector matches all of them")
}

func TestPolicyAllowsInsecureWhenConfigured(t *testing.T) {
	registry := head + "kind: Registry\nmetadata: {name: r}\nspec: {hostname: \"registry.local:5000\", plainHTTP: true}\n"
	assert.Equal(t, []string{
		"in.yaml:4: spec.plainHTTP: plain-HTTP registry registry.local:5000 is not allowed; set spec.registries.allowInsecure in the PipelineConfig to allow it (policy insecure-registry)",
	}, vet(t, Options{}, registry))
	config := head + "kind: PipelineConfig\nmetadata: {name: c}\nspec: {registries: {allowInsecure: true}}\n---\n"
	assert.Empty(t, vet(t, Options{}, config+registry))
}

func TestPolicyTokenTTLBounds(t *testing.T) {
	for ttl, ok := range map[string]bool{"9m": false, "10m": true, "24h": true, "168h": true, "169h": false} {
		got := vet(t, Options{}, head+"kind: PipelineConfig\nmetadata: {name: c}\nspec: {agent: {tokenTTL: "+ttl+"}}\n")
		if ok {
			assert.Empty(t, got, ttl)
		} else {
			assert.Equal(t, []string{"in.yaml:4: spec.agent.tokenTTL: agent token TTL " + ttl + " is outside 10m to 168h (7 days) (policy agent-token-ttl)"}, got, ttl)
		}
	}
}

func TestUserPolicyDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "owner.cue"), []byte(`package policy

deny: "target-owner": [
	for ns, objs in input.objects.Target for n, t in objs
	if t.metadata.labels == _|_ || t.metadata.labels.owner == _|_ {
		kind: "Target", namespace: ns, name: n, path: "metadata.labels"
		message: "Target has no owner label"
	},
]
`), 0o644))
	src := head + "kind: Registry\nmetadata: {name: r}\nspec: {hostname: registry.example.com}\n---\n" +
		head + "kind: Target\nmetadata:\n  name: a\n  labels: {env: prod}\nspec: {renderRegistryRef: {name: r}}\n---\n" +
		head + "kind: Target\nmetadata:\n  name: b\n  labels: {owner: team-b}\nspec: {renderRegistryRef: {name: r}}\n" +
		// Both get a release: a Target without one is a warning of its own.
		"---\n" + head + "kind: Release\nmetadata: {name: app}\nspec: {chart: {repository: ghcr.io/org/app, tag: \"1.0.0\"}}\n" +
		"---\n" + head + "kind: Profile\nmetadata: {name: all}\nspec: {releaseRef: {name: app}}\n"
	assert.Equal(t, []string{"in.yaml:10: metadata.labels: Target has no owner label (policy target-owner)"}, vet(t, Options{PolicyDirs: []string{dir}}, src))
	assert.Empty(t, vet(t, Options{}, src), "without the directory the policy does not apply")
}

func TestBrokenUserPolicy(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.cue"), []byte("package policy\n\ndeny: broken: [{kind: 1}]\n"), 0o644))
	_, err := New(Options{PolicyDirs: []string{dir}})
	assert.ErrorContains(t, err, filepath.Join(dir, "broken.cue")+":3:", "a policy that does not compile names its file and line")

	// A policy that breaks only on some input is reported as a problem at its line.
	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "late.cue"), []byte(`package policy

deny: late: [
	for ns, objs in input.objects.Registry for n, r in objs {
		kind: "Registry", namespace: ns, name: n, message: r.spec.nothere
	},
]
`), 0o644))
	got := vet(t, Options{PolicyDirs: []string{dir}}, head+"kind: Registry\nmetadata: {name: r}\nspec: {hostname: registry.example.com}\n")
	require.Len(t, got, 1)
	assert.True(t, strings.HasPrefix(got[0], filepath.Join(dir, "late.cue")+":5: "), got[0])

	_, err = New(Options{PolicyDirs: []string{t.TempDir()}})
	assert.ErrorContains(t, err, "no .cue files")
}

// TestUserPolicySeesEveryBinding: a policy of the user's sees every binding
// (the embedded ones are given only those of agent Releases, all they read).
func TestUserPolicySeesEveryBinding(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "count.cue"), []byte(`package policy

warn: "count": [{kind: "Registry", namespace: "default", name: "r", message: "\(len(input.bindings)) bindings"}]
`), 0o644))
	src := head + "kind: Registry\nmetadata: {name: r}\nspec: {hostname: registry.example.com}\n---\n" +
		head + "kind: Release\nmetadata: {name: app}\nspec: {componentVersionRef: {name: cv}}\n---\n" +
		head + "kind: Profile\nmetadata: {name: all}\nspec: {releaseRef: {name: app}, targetSelector: {}}\n---\n" +
		head + "kind: Target\nmetadata: {name: a}\nspec: {renderRegistryRef: {name: r}}\n---\n" +
		head + "kind: Target\nmetadata: {name: b}\nspec: {renderRegistryRef: {name: r}}\n"
	got := vet(t, Options{PolicyDirs: []string{dir}}, src)
	assert.Contains(t, got, "in.yaml:1: warning: 2 bindings (policy count)")
}

// TestEmbeddedPoliciesReadOnlyTheirKinds: the embedded policies name the
// kinds of input.objects they read (embeddedKinds), which is all the input
// holds when no policy of the user's is given: a policy reading another kind,
// or input.objects as a whole, must add it there.
func TestEmbeddedPoliciesReadOnlyTheirKinds(t *testing.T) {
	files, err := fs.Glob(policies.FS, "*.cue")
	require.NoError(t, err)
	named := regexp.MustCompile(`input\.objects\.([A-Za-z]+)`)
	for _, f := range files {
		b, err := fs.ReadFile(policies.FS, f)
		require.NoError(t, err)
		src := string(b)
		assert.Equal(t, strings.Count(src, "input.objects"), len(named.FindAllString(src, -1)), "%s reads input.objects other than by kind", f)
		for _, m := range named.FindAllStringSubmatch(src, -1) {
			assert.Contains(t, embeddedKinds, m[1], "%s reads %s: add it to embeddedKinds", f, m[1])
		}
	}
}
