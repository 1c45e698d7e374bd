package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// deleteTokens deletes the token Secrets of a Target: its next sync mints a
// new token (a forced rotation).
func deleteTokens(t *testing.T, s *testenv.APIServer, ns, target string) {
	t.Helper()
	require.NoError(t, s.Client.CoreV1().Secrets(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "solar.opendefense.cloud/agent-token-for=" + target}))
}

// reviewedChart is one chart of a reviewed list.
type reviewedChart struct {
	Repository     string `json:"repository"`
	Version        string `json:"version"`
	Digest         string `json:"digest"`
	RedactedDigest string `json:"redactedDigest"`
	Token          string `json:"token"`
}

// reviewedList is the reviewed list as its file holds it.
type reviewedList struct {
	Registry string          `json:"registry"`
	Charts   []reviewedChart `json:"charts"`
}

// readReviewed reads a reviewed list, and its charts by repository.
func readReviewed(t *testing.T, file string) (reviewedList, map[string]reviewedChart) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var rv reviewedList
	require.NoError(t, json.Unmarshal(b, &rv), string(b))
	charts := map[string]reviewedChart{}
	for _, c := range rv.Charts {
		charts[c.Repository] = c
	}
	return rv, charts
}

// TestReviewedList: the review (diff --write-reviewed) writes the list of
// what a push would push, without a secret; the merge renders and mints anew
// and push --reviewed pushes only when that is exactly the list: agent charts
// compared with their tokens left out, every other chart by digest. A change
// nobody reviewed, or a token rotation that came due after the review, pushes
// nothing and names the charts.
func TestReviewedList(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	api := testenv.StartAPIServer(t)
	api.CreateNamespaces(t, "alpha", "beta")
	registry := reg.Host + "/solar"
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	login := []string{"--registry", registry, "--plain-http", "--username", reg.Username, "--password-stdin"}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(reg.Password), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	render := func(name string) string {
		t.Helper()
		out := filepath.Join(dir, name)
		code, _, stderr := cli(append([]string{"render", "--kubeconfig", api.Kubeconfig, "--out", out, examples}, login...)...)
		require.Equal(t, 0, code, stderr)
		return out
	}
	code, _, stderr := cli(append([]string{"publish", "--kubeconfig", api.Kubeconfig, examples}, login...)...)
	require.Equal(t, 0, code, stderr)

	// The pull request: a change, and edge-1 due for a new token.
	changeRelease(t, examples, "2", "3")
	live := testenv.AgentTokens(t, api, "alpha")
	deleteTokens(t, api, "alpha", "edge-1")
	reviewed := filepath.Join(dir, "reviewed.json")
	code, stdout, stderr := cli(append([]string{"diff", "--files", "--kubeconfig", api.Kubeconfig, "--write-reviewed", reviewed, examples}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "reaches alpha/edge-1; token rotates")
	assert.Len(t, testenv.AgentTokens(t, api, "alpha"), 1, "the review mints nothing")
	b, err := os.ReadFile(reviewed)
	require.NoError(t, err)
	for _, tok := range live {
		assert.NotContains(t, string(b), tok, "no token in the reviewed list")
	}
	rv, charts := readReviewed(t, reviewed)
	assert.Equal(t, registry, rv.Registry)
	assert.Len(t, rv.Charts, 3, "the release chart, edge-1's agent chart and its bootstrap chart")
	stable := charts["alpha/alpha/release-podinfo-stable"]
	assert.Equal(t, "0.0.2", stable.Version)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, stable.Digest)
	agent := charts["alpha/alpha/edge-1/release-solar-agent"]
	assert.Equal(t, "0.0.2", agent.Version)
	assert.Empty(t, agent.Digest, "an agent chart is not pinned by its digest: its token is minted at publish")
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, agent.RedactedDigest)
	assert.Equal(t, "rotates", agent.Token)
	assert.NotEmpty(t, charts["alpha/bootstrap-edge-1"].Digest)

	// Main renders something else than was reviewed: nothing is pushed.
	changeRelease(t, examples, "3", "4")
	out := render("unreviewed")
	assert.Len(t, testenv.AgentTokens(t, api, "alpha"), 2, "the merge mints edge-1's new token")
	code, _, stderr = cli(append([]string{"push", out, "--reviewed", reviewed}, login...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "differs from what was reviewed")
	assert.Contains(t, stderr, "alpha/alpha/release-podinfo-stable 0.0.2: not the content reviewed")
	assert.NotContains(t, stderr, "bootstrap-edge-1", "it names the same versions as reviewed")
	assert.NotContains(t, stderr, "release-solar-agent", "the agent chart is as reviewed, its new token aside")
	code, stdout, stderr = publishCLI(t, reg, reg.Password, "--plain-http", "--registry", registry, "--no-credentials", "--dry-run", "-o", "json", examples)
	require.Equal(t, 0, code, stderr)
	for _, tr := range decodeReport(t, stdout).Targets {
		for _, rel := range tr.Releases {
			if rel.Key == "podinfo" && tr.Name == "edge-1" {
				assert.Equal(t, "0.0.2", rel.Version, "the refused push wrote nothing: 0.0.2 is still to come")
			}
		}
	}

	// Main renders what was reviewed, minting now: pushed.
	changeRelease(t, examples, "4", "3")
	out = render("as-reviewed")
	code, stdout, stderr = cli(append([]string{"push", out, "--reviewed", reviewed}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.True(t, hasRow(stdout, "alpha/alpha/edge-1/release-solar-agent", "0.0.2", "update"), stdout)
	assert.True(t, hasRow(stdout, "alpha/bootstrap-edge-1", "0.0.2", "update"), stdout)
	code, stdout, stderr = cli(append([]string{"diff", "--kubeconfig", api.Kubeconfig, "--exit-code", examples}, login...)...)
	assert.Equal(t, 0, code, "the registry holds what main renders: %s%s", stdout, stderr)

	// Reviewed: no change. Then edge-2's token comes due: refused.
	again := filepath.Join(dir, "again.json")
	code, _, stderr = cli(append([]string{"diff", "--kubeconfig", api.Kubeconfig, "--write-reviewed", again, examples}, login...)...)
	require.Equal(t, 0, code, stderr)
	rv, _ = readReviewed(t, again)
	assert.Empty(t, rv.Charts)
	deleteTokens(t, api, "alpha", "edge-2")
	out = render("rotated")
	code, _, stderr = cli(append([]string{"push", out, "--reviewed", again}, login...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "alpha/alpha/edge-2/release-solar-agent 0.0.2: not reviewed; only its token is new: a token rotation came due after the review")
	assert.Contains(t, stderr, "alpha/bootstrap-edge-2 0.0.2: not reviewed")

	// A list reviewed against another registry is refused.
	other := append([]string{"push", out, "--reviewed", again}, login...)
	other[slices.Index(other, registry)] = reg.Host + "/other"
	code, _, stderr = cli(other...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "reviewed against "+registry+", not "+reg.Host+"/other")
}
