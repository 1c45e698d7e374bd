package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// A Target revoked on purpose is an operator's decision: credentials sync
// and render report it and exit 0; the Target renders without its agent
// release, excluded with the reason. credentials sync takes only its flags.
func TestRevokedTargetIsNotAFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	s := testenv.StartAPIServer(t)
	s.CreateNamespaces(t, "alpha", "beta")
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	code, _, stderr := solar(t, "credentials", "sync", "--kubeconfig", s.Kubeconfig, examples)
	require.Equal(t, 0, code, stderr)

	targets := filepath.Join(examples, "alpha", "targets.yaml")
	b, err := os.ReadFile(targets)
	require.NoError(t, err)
	revoked := strings.Replace(string(b), "  name: edge-2\n", "  name: edge-2\n  annotations:\n    "+api.AnnotationAgentCredential+": revoked\n", 1)
	require.NotEqual(t, string(b), revoked)
	require.NoError(t, os.WriteFile(targets, []byte(revoked), 0o644))

	code, stdout, stderr := solar(t, "credentials", "sync", "--kubeconfig", s.Kubeconfig, examples)
	assert.Equal(t, 0, code, stdout+stderr)
	assert.Regexp(t, `alpha/edge-2\s+False\s+Revoked`, stdout)
	assert.Contains(t, stderr, "warning: Target alpha/edge-2: its agent credential is revoked")

	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr = solar(t, "render", "-n", "alpha", "-o", "json", "--out", out, "--kubeconfig", s.Kubeconfig, examples)
	require.Equal(t, 0, code, stderr)
	for _, tr := range decodeReport(t, stdout).Targets {
		if tr.Name != "edge-2" {
			continue
		}
		assert.Equal(t, "create", tr.Action, "edge-2 renders")
		for _, rel := range tr.Releases {
			assert.NotEqual(t, "solar-agent", rel.Key, "no agent release for a revoked credential")
		}
		require.NotEmpty(t, tr.Excluded)
		last := tr.Excluded[len(tr.Excluded)-1]
		assert.Equal(t, "alpha/solar-agent", last.Release)
		assert.Equal(t, "its agent credential is revoked (annotation "+api.AnnotationAgentCredential+")", last.Reason)
	}

	code, _, stderr = solar(t, "credentials", "sync", "--no-credentials", "--kubeconfig", s.Kubeconfig, examples)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "unknown flag: --no-credentials")
}
