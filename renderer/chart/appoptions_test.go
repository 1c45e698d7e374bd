package chart

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// TestAppPolicyValues: the values an application HelmRelease's policy
// renders to. AppOptions' zero value is the policy of before spec.flux
// existed (no spec.timeout, 3 retries), so an input without it keeps its
// digests; 0 retries is one attempt, kept as helm-controller's default.
func TestAppPolicyValues(t *testing.T) {
	zero, one := 0, 1
	for name, tc := range map[string]struct {
		opts    AppOptions
		timeout any
		retries any
	}{
		"unset":     {AppOptions{}, nil, 3.0},
		"set":       {AppOptions{Timeout: 2 * time.Minute, Retries: &one}, "2m0s", 1.0},
		"0 retries": {AppOptions{Retries: &zero}, nil, nil},
	} {
		v := asValues(AppPolicy(false, tc.opts))
		assert.Equal(t, tc.timeout, v["timeout"], name)
		for _, action := range []string{"install", "upgrade"} {
			assert.Equal(t, tc.retries, v[action].(map[string]any)["remediation"].(map[string]any)["retries"], "%s: %s", name, action)
		}
	}
	assert.NotContains(t, asValues(ChainPolicy()), "timeout", "levels 1 and 2 do not wait")
}

// The PipelineConfig's agent image reaches an agent release's values by
// digest, under the Release's own values: a Release that names its image
// keeps it, and the Release's values are not changed in place.
func TestAgentImage(t *testing.T) {
	const image = "127.0.0.1:5000/solar/solar-agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	sel := &resolve.Selected{Release: &model.Release{}}
	sel.Release.Name, sel.Release.Namespace = "solar-agent", "alpha"
	sel.Release.Spec.Values = map[string]any{"interval": "1m", "image": map[string]any{"pullPolicy": "Always"}}
	got := Agent(sel, AppOptions{AgentImage: image}, "edge-1", []byte("kubeconfig")).Values["release"].(map[string]any)["values"]
	assert.Equal(t, map[string]any{"interval": "1m", "image": map[string]any{"pullPolicy": "Always",
		"repository": "127.0.0.1:5000/solar/solar-agent", "digest": image[len(image)-71:]}}, got)
	assert.Equal(t, map[string]any{"pullPolicy": "Always"}, sel.Release.Spec.Values["image"], "the Release's values are its own")

	sel.Release.Spec.Values = map[string]any{"image": map[string]any{"repository": "mirror.example.com/agent", "tag": "1.0"}}
	got = Agent(sel, AppOptions{AgentImage: image}, "edge-1", nil).Values["release"].(map[string]any)["values"]
	assert.Equal(t, sel.Release.Spec.Values, got, "a Release that names its image keeps it")
	got = Agent(sel, AppOptions{}, "edge-1", nil).Values["release"].(map[string]any)["values"]
	assert.Equal(t, sel.Release.Spec.Values, got)
}
