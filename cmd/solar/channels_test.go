package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// stdout is the result, stderr the conversation: warnings go to stderr, and
// -q hides them on every command.
func TestWarningsGoToStderr(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"vet", "../../examples"},
		{"render", "--no-credentials", "--out", out, "../../examples"},
		{"diff", "--no-credentials", "--out", out, "../../examples"},
	} {
		code, stdout, stderr := solar(t, args...)
		require.Equal(t, 0, code, "%v: %s", args, stderr)
		assert.NotContains(t, stdout, "warning:", "%v: stdout is the result", args)
		assert.Contains(t, stderr, "warning: Targets edge-1, edge-2 in namespace alpha all get agent credentials", args)

		code, stdout, stderr = solar(t, append([]string{"-q"}, args...)...)
		require.Equal(t, 0, code, "%v: %s", args, stderr)
		assert.NotContains(t, stdout+stderr, "warning:", "%v -q", args)
	}
}

// With -o json, stdout is one document that holds the fatal error: a CI
// job's saved plan never reads as a clean no-op, and the summary says the
// run stopped.
func TestFatalErrorsAreInTheDocument(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"publish", "--no-credentials", "--plain-http", "--registry", reg.Host + "/solar", "-o", "json",
		"--username", reg.Username, "--password-stdin", "../../examples"}, strings.NewReader("wrong-password\n"), &out, &errOut)
	stdout, stderr := out.String(), errOut.String()
	assert.Equal(t, 1, code)
	var report struct {
		Targets []any
		Error   string
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	assert.Contains(t, report.Error, "the registry denied access: 401 Unauthorized")
	assert.Contains(t, stderr, "; stopped by an error: ")
	assert.NotRegexp(t, `\(0 errors\)\n`, stderr)

	refused := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	for _, args := range [][]string{
		{"verify", "-o", "json", "--out", filepath.Join(t.TempDir(), "typo")},
		{"gc", "-o", "yaml", "--registry", refused, "--plain-http"},
		{"bootstrap-manifests", "-o", "json", "edge-1"},
	} {
		code, stdout, stderr := solar(t, args...)
		assert.Equal(t, 1, code, args)
		var doc struct{ Error string }
		require.NoError(t, yaml.Unmarshal([]byte(stdout), &doc), "%v: %q", args, stdout)
		assert.NotEmpty(t, doc.Error, args)
		assert.Contains(t, stderr, "solar: "+doc.Error+"\n", args)
	}
}
