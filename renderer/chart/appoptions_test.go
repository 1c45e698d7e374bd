package chart

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
