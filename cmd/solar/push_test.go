package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// TestReviewedPush: render --registry computes against the registry into a
// layout; push puts exactly those bytes in, what publish would have pushed;
// after the registry moved, push refuses and pushes nothing.
func TestReviewedPush(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	registry := reg.Host + "/solar"
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	cli := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	login := []string{"--registry", registry, "--plain-http", "--username", reg.Username, "--password-stdin"}

	// What publish would push, without pushing.
	code, stdout, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", registry, "--dry-run", "-o", "json", examples)
	require.Equal(t, 0, code, stderr)
	want := digests(decodeReport(t, stdout))

	reviewed := filepath.Join(dir, "reviewed")
	code, stdout, stderr = cli(reg.Password, append([]string{"render", "--no-credentials", "-o", "json", "--out", reviewed, examples}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, want, digests(decodeReport(t, stdout)), "render --registry renders what publish would")
	code, stdout, stderr = cli(reg.Password, append([]string{"push", reviewed}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.True(t, hasRow(stdout, "alpha/bootstrap-edge-1", "0.0.1", "create"), stdout)
	assert.True(t, strings.HasPrefix(stdout, "REPOSITORY "), "a header:\n%s", stdout)

	// The registry holds exactly those bytes: publish finds nothing to do.
	code, stdout, stderr = publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", registry, "-o", "json", examples)
	require.Equal(t, 0, code, stderr)
	r := decodeReport(t, stdout)
	assert.Equal(t, want, digests(r))
	for _, tr := range r.Targets {
		assert.Equal(t, publish.Unchanged, tr.Action, tr.Name)
	}

	code, stdout, stderr = cli(reg.Password, append([]string{"verify"}, login...)...)
	require.Equal(t, 0, code, "verify after push: %s%s", stdout, stderr)

	// Reviewed, then the registry moved: nothing is pushed.
	changeRelease(t, examples, "2", "3")
	stale := filepath.Join(dir, "stale")
	code, _, stderr = cli(reg.Password, append([]string{"render", "--no-credentials", "--out", stale, examples}, login...)...)
	require.Equal(t, 0, code, stderr)
	changeRelease(t, examples, "3", "4")
	code, _, stderr = publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", registry, examples)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = cli(reg.Password, append([]string{"push", stale}, login...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "the registry moved since the layout was rendered: alpha/alpha/release-podinfo-stable:0.0.2 holds other content; render again")
	code, stdout, stderr = publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", registry, "--dry-run", "-o", "json", examples)
	require.Equal(t, 0, code, stderr)
	for _, tr := range decodeReport(t, stdout).Targets {
		assert.Equal(t, publish.Unchanged, tr.Action, "%s: the refused push wrote nothing", tr.Name)
	}
}
