package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFluxSettingsBounds: the PipelineConfig's spec.flux timeout is a Go
// duration between 30s and 1h (policy flux-timeout) and its retries an
// integer from 0 to 10; a bad value is an error at its line.
func TestFluxSettingsBounds(t *testing.T) {
	config := head + "kind: PipelineConfig\nmetadata: {name: c}\nspec:\n  flux:\n"
	for flux, want := range map[string][]string{
		"    timeout: 30s\n    retries: 0\n": nil,
		"    timeout: 1h\n    retries: 10\n": nil,
		"    timeout: 29s\n":                 {"in.yaml:6: spec.flux.timeout: application HelmRelease timeout 29s is outside 30s to 1h (policy flux-timeout)"},
		"    timeout: 61m\n":                 {"in.yaml:6: spec.flux.timeout: application HelmRelease timeout 61m is outside 30s to 1h (policy flux-timeout)"},
		"    timeout: 5 minutes\n":           {`in.yaml:6:5: spec.flux.timeout: "5 minutes" is not a duration; want a Go duration such as 90s, 10m or 24h`},
		"    retries: 11\n":                  {"in.yaml:6:5: spec.flux.retries: 11 is out of range; want at most 10"},
		"    retries: -1\n":                  {"in.yaml:6:5: spec.flux.retries: -1 is out of range; want at least 0"},
		"    retries: three\n":               {`in.yaml:6:5: spec.flux.retries: "three" is a string; want an integer, e.g. retries: 10`},
	} {
		assert.Equal(t, want, vet(t, Options{}, config+flux), flux)
	}
}

// TestAgentImageByDigest: the PipelineConfig's agent image names an image by
// digest; a tag alone is an error at its line.
func TestAgentImageByDigest(t *testing.T) {
	config := head + "kind: PipelineConfig\nmetadata: {name: c}\nspec:\n  agent:\n    image: "
	const hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	bad := func(image string) []string {
		return []string{`in.yaml:6:5: spec.agent.image: "` + image + `" must be REPOSITORY@sha256:DIGEST, an image by digest`}
	}
	for image, want := range map[string][]string{
		"127.0.0.1:5000/solar/solar-agent@sha256:" + hex:       nil,
		"registry.example.com/solar/solar-agent@sha256:" + hex: nil,
		"solar-agent@sha256:" + hex:                            nil,
		"registry.example.com/solar/solar-agent:0.0.3":         bad("registry.example.com/solar/solar-agent:0.0.3"),
		"solar-agent@sha256:abc":                               bad("solar-agent@sha256:abc"),
	} {
		assert.Equal(t, want, vet(t, Options{}, config+image+"\n"), image)
	}
}
