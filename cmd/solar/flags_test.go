package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRegistryFlag: --registry is HOST[:PORT][/PREFIX], checked with
// oras-go's reference rules, for publish and bootstrap-manifests alike.
func TestRegistryFlag(t *testing.T) {
	for _, c := range []struct{ in, host, prefix, err string }{
		{in: "registry.example.com", host: "registry.example.com"},
		{in: "127.0.0.1:5000/", host: "127.0.0.1:5000"},
		{in: "registry.example.com/solar/prod", host: "registry.example.com", prefix: "solar/prod"},
		{in: "", err: "--registry is required"},
		{in: "oci://registry.example.com/solar", host: "registry.example.com", prefix: "solar"},
		{in: "https://registry.example.com", err: "a scheme other than oci://"},
		{in: "ci:s3cret@registry.example.com", err: "it holds user information (user:password@)"},
		{in: "registry.example.com/Solar", err: "invalid --registry"},
		{in: "registry.example.com/solar:1.0", err: `a tag or digest "1.0"`},
		{in: "bad host", err: "invalid --registry"},
	} {
		host, prefix, err := (&registryFlags{registry: c.in}).parse()
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.in)
			continue
		}
		assert.NoError(t, err, c.in)
		assert.Equal(t, c.host, host, c.in)
		assert.Equal(t, c.prefix, prefix, c.in)
	}

	for _, args := range [][]string{{"publish", "examples"}, {"bootstrap-manifests", "edge-1"}} {
		code, _, stderr := solar(t, append(args, "--registry", "https://registry.example.com")...)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "a scheme other than oci://", args[0])
		code, stdout, stderr := solar(t, append(args, "--registry", "ci:s3cret@registry.example.com")...)
		assert.Equal(t, 1, code)
		assert.NotContains(t, stdout+stderr, "s3cret", "a password in --registry is never echoed")
	}
}

// TestCompletion: -n and --target complete from the Targets of the PATHs
// typed so far (cobra's dynamic completion, as the shell scripts of
// `solar completion bash` ask for it).
func TestCompletion(t *testing.T) {
	_, stdout, _ := solar(t, "__complete", "render", "../../examples", "-n", "")
	assert.Equal(t, "alpha\nbeta\n:4\n", stdout)
	_, stdout, _ = solar(t, "__complete", "render", "../../examples", "-n", "beta", "--target", "")
	assert.Equal(t, "plant-1\nplant-2\n:4\n", stdout)
	code, stdout, _ := solar(t, "completion", "bash")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "__solar_")
}

// TestCommandGroupTypo: a mistyped subcommand fails with exit 1 and says
// so; the group alone prints its help.
func TestCommandGroupTypo(t *testing.T) {
	for _, group := range []string{"fleet", "credentials", "registry"} {
		code, _, stderr := solar(t, group, "aply")
		assert.Equal(t, 1, code, group)
		assert.Contains(t, stderr, `unknown command "aply" for "solar `+group+`"`)
		code, stdout, _ := solar(t, group)
		assert.Equal(t, 0, code, group)
		assert.Contains(t, stdout, "Available Commands:")
	}
}
