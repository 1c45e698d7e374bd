package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// TestDiff: a changed Release diffs to exactly its files and the Targets it
// reaches; unchanged input diffs to nothing; a deleted Target is an orphan,
// pruned only with --prune.
func TestDiff(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	out := filepath.Join(dir, "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, examples)
	require.Equal(t, 0, code, stderr)

	code, stdout, stderr := solar(t, "diff", "--no-credentials", "--exit-code", "-o", "json", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	var d pipeline.DiffReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &d))
	assert.Empty(t, d.Charts, "unchanged input")

	changeRelease(t, examples, "2", "3")
	code, stdout, stderr = solar(t, "diff", "--no-credentials", "--exit-code", "-o", "json", "--out", out, examples)
	require.Equal(t, 2, code, stderr)
	d = pipeline.DiffReport{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &d))
	got := map[string][]string{}
	for _, c := range d.Charts {
		assert.Equal(t, []string{"alpha/edge-1"}, c.Targets, c.Repository)
		assert.Equal(t, "0.0.1", c.From)
		assert.Equal(t, "0.0.2", c.To)
		for _, f := range c.Files {
			got[c.Repository] = append(got[c.Repository], f.Name)
		}
	}
	assert.Equal(t, map[string][]string{
		"alpha/alpha/release-podinfo-stable": {"values.yaml"},
		"alpha/bootstrap-edge-1":             {"values.yaml"},
	}, got)
	assert.Contains(t, d.Charts[0].Files[0].Diff, "-    replicaCount: 2\n+    replicaCount: 3\n")

	// A deleted Target: an orphan, listed by diff and render, pruned only
	// with --prune.
	testenv.RemovePlant2(t, examples)
	code, stdout, _ = solar(t, "diff", "--no-credentials", "-n", "beta", "--out", out, examples)
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "# orphan: beta/bootstrap-plant-2: Target beta/plant-2 is no longer in the input")
	code, stdout, stderr = solar(t, "render", "--no-credentials", "-n", "beta", "-o", "json", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	r := decodeReport(t, stdout)
	require.Len(t, r.Orphans, 1)
	assert.Nil(t, r.Orphans[0].Pruned, "never without --prune")
	code, stdout, stderr = solar(t, "render", "--no-credentials", "-n", "beta", "--prune", "-o", "json", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	r = decodeReport(t, stdout)
	require.Len(t, r.Orphans, 1)
	require.NotNil(t, r.Orphans[0].Pruned)
	assert.Equal(t, "beta/bootstrap-plant-2", r.Orphans[0].Pruned.Repository)
	assert.Equal(t, "0.0.2", r.Orphans[0].Pruned.Version)
	files := chartFiles(t, out, "beta/bootstrap-plant-2", "0.0.2")
	assert.Contains(t, files["values.yaml"], "releases: []", "a bootstrap without releases: Flux uninstalls them")
}

// TestDiffTokenRotates: when a Target's agent token is due for a new one
// (here its token Secrets are gone, as after a forced rotation), diff shows the
// token rotating, not the token deleted (user: {}), and mints nothing.
func TestDiffTokenRotates(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	s := testenv.StartAPIServer(t)
	s.CreateNamespaces(t, "alpha")
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := solar(t, "render", "-n", "alpha", "--kubeconfig", s.Kubeconfig, "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, s.Client.CoreV1().Secrets("alpha").DeleteCollection(context.Background(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "solar.opendefense.cloud/agent-token-for=edge-1"}))

	code, stdout, stderr := solar(t, "diff", "-n", "alpha", "--no-app-charts", "--kubeconfig", s.Kubeconfig, "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "# update Secret flux-system/edge-1-solar-agent-credential (level 2) on alpha/edge-1\n", "the objects")
	assert.Regexp(t, `(?m)^\+  values.yaml: <redacted sha256:[0-9a-f]{12}>$`, stdout, "a Secret's values as fingerprints")
	assert.Contains(t, stderr, "alpha/edge-1: the agent token rotates at publish (alpha/alpha/edge-1/release-solar-agent)\n")

	code, stdout, stderr = solar(t, "diff", "--files", "-n", "alpha", "--kubeconfig", s.Kubeconfig, "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "# alpha/alpha/edge-1/release-solar-agent 0.0.1 -> 0.0.2, reaches alpha/edge-1; token rotates\n")
	assert.NotContains(t, stdout, "user: {}", "the token is not shown deleted")
	assert.Regexp(t, `(?m)^-\s+token: <redacted sha256:[0-9a-f]{12}>$`, stdout)
	assert.Regexp(t, `(?m)^\+\s+token: <a new token, minted at publish>$`, stdout)
	assert.NotContains(t, stdout, "edge-2/release-solar-agent", "edge-2 keeps its token")
	assert.Len(t, testenv.AgentTokens(t, s, "alpha"), 1, "the diff minted nothing: only edge-2's token is left")

	code, stdout, stderr = solar(t, "diff", "-n", "alpha", "-o", "json", "--kubeconfig", s.Kubeconfig, "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	var d pipeline.DiffReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &d))
	rotating := map[string]string{}
	for _, c := range d.Charts {
		if c.Token != "" {
			rotating[c.Repository] = c.Token
		}
		for _, f := range c.Files {
			assert.False(t, strings.Contains(f.Diff, "user: {}"), c.Repository)
		}
	}
	assert.Equal(t, map[string]string{"alpha/alpha/edge-1/release-solar-agent": "rotates"}, rotating)
}

// TestDiffGroupsAlikeChanges: one values change of a Release that 20
// Targets in 4 namespaces get is one diff per object, shown once, its header
// naming the first Target and how many more, never all 20; each Target's
// HelmRelease is named after it, and the same change to it is the same group.
// --verbose lists the others on lines of their own, each with its object.
// --files: one diff per chart alike on many Targets.
func TestDiffGroupsAlikeChanges(t *testing.T) {
	dir := t.TempDir()
	tree, changed, out := filepath.Join(dir, "tree"), filepath.Join(dir, "changed"), filepath.Join(dir, "out")
	for _, g := range [][]string{{"-out", tree}, {"-out", changed, "-change-release"}} {
		gen, err := exec.Command("go", append([]string{"run", "../../scripts/genobjects", "-targets", "20", "-per", "5"}, g...)...).CombinedOutput()
		require.NoError(t, err, "%s", gen)
	}
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, tree)
	require.Equal(t, 0, code, stderr)

	code, stdout, stderr := solar(t, "diff", "--no-credentials", "--no-app-charts", "--out", out, changed)
	require.Equal(t, 0, code, stderr)
	var headers []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "#") {
			headers = append(headers, l)
		}
	}
	assert.Equal(t, []string{
		"# update OCIRepository flux-system/solar-bootstrap-app-0 (level 1) on ns-0000/target-0 and 19 more Targets, the same but for each Target's name and namespace; --verbose lists them",
		"# update HelmRelease flux-system/target-0-app-0 (level 2) on ns-0000/target-0 and 19 more Targets, the same but for each Target's name and namespace; --verbose lists them",
	}, headers)
	assert.Contains(t, stdout, "-    replicaCount: 1\n+    replicaCount: 10\n")
	assert.Contains(t, stderr, "24 charts, 9 objects, 20 Targets would change")

	code, stdout, stderr = solar(t, "diff", "-v", "--no-credentials", "--no-app-charts", "--out", out, changed)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "# update HelmRelease flux-system/target-0-app-0 (level 2) on ns-0000/target-0 and 19 more Targets, the same but for each Target's name and namespace\n")
	assert.Contains(t, stdout, "#   ns-0001/target-0, ns-0002/target-0, ns-0003/target-0,\n#   ns-0000/target-1 (HelmRelease flux-system/target-1-app-0),\n")
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "#   ") {
			assert.LessOrEqual(t, len(l), 100, l)
		}
	}
	for ns := range 4 {
		for tg := range 5 {
			if ns+tg > 0 {
				assert.Contains(t, stdout, fmt.Sprintf("ns-%04d/target-%d", ns, tg))
			}
		}
	}

	// --files: the release chart of each namespace, and each Target's
	// bootstrap chart, alike: two diffs.
	code, stdout, stderr = solar(t, "diff", "--files", "--no-credentials", "--out", out, changed)
	require.Equal(t, 0, code, stderr)
	headers = nil
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "#") {
			headers = append(headers, l)
		}
	}
	assert.Equal(t, []string{
		"# ns-0000/ns-0000/release-release-0 0.0.1 -> 0.0.2, reaches ns-0000/target-0 and 19 more Targets, the same but for each Target's name and namespace; --verbose lists them",
		"# ns-0000/bootstrap-target-0 0.0.1 -> 0.0.2, reaches ns-0000/target-0 and 19 more Targets, the same but for each Target's name and namespace; --verbose lists them",
	}, headers)
}
