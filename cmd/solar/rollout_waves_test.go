package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/store"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// rolloutInput writes the rollout tests' input (testenv.RolloutInput).
func rolloutInput(t *testing.T, dir string, replicas int, policy string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "input.yaml"), []byte(testenv.RolloutInput(replicas, policy)), 0o644))
}

// rolloutEnv is a layout, an input and the API server the Targets report to.
type rolloutEnv struct {
	t             *testing.T
	api           *testenv.APIServer
	input, layout string
}

func newRolloutEnv(t *testing.T) *rolloutEnv {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	api := testenv.StartAPIServer(t)
	api.CreateNamespaces(t, "alpha")
	return &rolloutEnv{t: t, api: api, input: t.TempDir(), layout: filepath.Join(t.TempDir(), "layout")}
}

// render renders the input into the layout and returns its report.
func (e *rolloutEnv) render() pipeline.Report {
	e.t.Helper()
	code, stdout, stderr := solar(e.t, "render", "-o", "json", "--out", e.layout, "--kubeconfig", e.api.Kubeconfig, e.input)
	require.Equal(e.t, 0, code, "%s\n%s", stdout, stderr)
	return decodeReport(e.t, stdout)
}

// members are the Targets of a report by their rollout state.
func members(r pipeline.Report) map[string][]string {
	out := map[string][]string{}
	for _, tg := range r.Targets {
		if tg.Rollout != nil {
			out[tg.Rollout.State] = append(out[tg.Rollout.State], tg.Name)
		}
	}
	return out
}

// reportReady writes, as each named Target's agent would, a TargetReport
// saying its releases run what its report r says was published for it.
func (e *rolloutEnv) reportReady(r pipeline.Report, names ...string) {
	e.t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(e.api.Config)
	require.NoError(e.t, err)
	reports := dyn.Resource(kube.TargetReportGVR).Namespace("alpha")
	for _, tg := range r.Targets {
		if !slices.Contains(names, tg.Name) {
			continue
		}
		spec := targetreport.Spec{LastReportTime: metav1.Now()}
		for _, rel := range tg.Releases {
			relNS, name, _ := strings.Cut(rel.Release, "/")
			spec.Releases = append(spec.Releases, targetreport.Release{Name: targetreport.ReleaseName("alpha", relNS, name),
				Namespace: "flux-system", Phase: targetreport.Ready, Revision: rel.Version + "+" + digest.Digest(rel.Digest).Encoded()[:12]})
		}
		b, err := json.Marshal(spec)
		require.NoError(e.t, err)
		var obj map[string]any
		require.NoError(e.t, json.Unmarshal(b, &obj))
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "TargetReport",
			"metadata": map[string]any{"name": tg.Name, "namespace": "alpha"}, "spec": obj}}
		if old, err := reports.Get(ctx, tg.Name, metav1.GetOptions{}); err == nil {
			u.SetResourceVersion(old.GetResourceVersion())
			_, err = reports.Update(ctx, u, metav1.UpdateOptions{})
			require.NoError(e.t, err)
			continue
		}
		_, err = reports.Create(ctx, u, metav1.CreateOptions{})
		require.NoError(e.t, err)
	}
}

// bootstraps are the bootstrap charts' tags in the layout, by Target.
func (e *rolloutEnv) bootstraps() map[string]string {
	e.t.Helper()
	ctx := context.Background()
	// Open only while reading: an open layout holds its lock.
	l, err := store.OpenLayout(ctx, e.layout, store.LayoutOptions{ReadOnly: true, MustExist: true})
	require.NoError(e.t, err)
	defer l.Close()
	out := map[string]string{}
	for i := 1; i <= 12; i++ {
		name := fmt.Sprintf("t%02d", i)
		repo, err := l.Repository(ctx, "alpha/bootstrap-"+name)
		require.NoError(e.t, err)
		tags, err := store.Tags(ctx, repo)
		require.NoError(e.t, err)
		var digests []string
		for _, tag := range tags {
			d, err := repo.Resolve(ctx, tag)
			require.NoError(e.t, err)
			digests = append(digests, tag+"@"+d.Digest.String()[:19])
		}
		out[name] = strings.Join(digests, " ")
	}
	return out
}

// TestRolloutGoodChangePassesWaveByWave (issue 49, done-when 1, on a layout
// and a real API server, the Targets' reports written as their agents
// would): a change to 12 Targets under one canary, a third and the rest
// reaches each wave only after the one before reported Ready at the new
// versions, the held Targets' bootstrap charts untouched byte for byte;
// the end state is a plain publish's.
func TestRolloutGoodChangePassesWaveByWave(t *testing.T) {
	e := newRolloutEnv(t)
	rolloutInput(t, e.input, 1, "")
	e.render()
	before := e.bootstraps()

	rolloutInput(t, e.input, 2, testenv.ThreeWaves("10m", "Halt"))
	r := e.render()
	require.Len(t, r.Rollouts, 1)
	assert.Equal(t, rollout.Progressing, r.Rollouts[0].Phase)
	assert.Equal(t, []string{"t01"}, members(r)[rollout.Admitted], "the canary only")
	assert.Len(t, members(r)[rollout.Held], 11)
	after := e.bootstraps()
	for name, tags := range before {
		if name != "t01" {
			assert.Equal(t, tags, after[name], "a held Target's bootstrap chart is untouched")
		}
	}
	assert.NotEqual(t, before["t01"], after["t01"])

	code, stdout, stderr := solar(t, "diff", "--out", e.layout, "--kubeconfig", e.api.Kubeconfig, e.input)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "# rollout alpha/web: Progressing (wave canary: 0 of 1 members passed, 1 needed); 11 Targets held, not shown")
	assert.NotContains(t, stdout, "on alpha/t02", "a held Target changes nothing on its cluster")

	r = e.render()
	assert.Equal(t, []string{"t01"}, members(r)[rollout.Admitted], "nothing passes without its report")
	e.reportReady(r, "t01")
	r = e.render()
	assert.Equal(t, []string{"t01"}, members(r)[rollout.Passed])
	assert.Equal(t, []string{"t02", "t03", "t04", "t05"}, members(r)[rollout.Admitted], "34% of the 11 left")
	assert.Len(t, members(r)[rollout.Held], 7)

	e.reportReady(r, "t02", "t03", "t04", "t05")
	r = e.render()
	assert.Len(t, members(r)[rollout.Admitted], 7, "the rest")
	e.reportReady(r, members(r)[rollout.Admitted]...)
	r = e.render()
	assert.Equal(t, rollout.Done, r.Rollouts[0].Phase)
	assert.Len(t, members(r)[rollout.Passed], 12)

	// The end state is a plain publish's.
	plain := filepath.Join(t.TempDir(), "plain")
	rolloutInput(t, e.input, 1, "")
	code, _, stderr = solar(t, "render", "-o", "json", "--out", plain, e.input)
	require.Equal(t, 0, code, stderr)
	rolloutInput(t, e.input, 2, "")
	code, stdout, stderr = solar(t, "render", "-o", "json", "--out", plain, e.input)
	require.Equal(t, 0, code, stderr)
	want := digests(decodeReport(t, stdout))
	for repo, got := range digests(r) {
		assert.Equal(t, want[repo], got, repo)
	}
}

// TestRolloutBadCanaryRollsBack (done-when 2): a canary that never reports
// Ready fails at its deadline; the other 11 bootstrap charts never moved;
// with onFailure Rollback the canary's bootstrap chart is its previous
// content again, at a new version.
func TestRolloutBadCanaryRollsBack(t *testing.T) {
	e := newRolloutEnv(t)
	rolloutInput(t, e.input, 1, "")
	e.render()
	before := e.bootstraps()

	rolloutInput(t, e.input, 3, testenv.ThreeWaves("2s", "Rollback"))
	r := e.render()
	require.Equal(t, []string{"t01"}, members(r)[rollout.Admitted])
	// gc keeps what a rollback publishes again: the state names it.
	code, stdout, stderr := solar(t, "gc", "--keep", "1", "--out", e.layout, "-o", "json")
	require.Equal(t, 0, code, stderr)
	var gc store.GCResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &gc), stdout)
	assert.Contains(t, gc.Held, store.Held{Version: "alpha/bootstrap-t01:0.0.1", By: []string{"alpha/solar-rollout-web:0.0.1"}}, stdout)
	time.Sleep(2 * time.Second)
	r = e.render()
	require.Len(t, r.Rollouts, 1)
	assert.Equal(t, rollout.RolledBack, r.Rollouts[0].Phase)
	assert.Contains(t, r.Rollouts[0].Message, "wave canary failed")
	assert.Equal(t, []string{"t01"}, members(r)[rollout.Reverted])
	after := e.bootstraps()
	for name, tags := range before {
		if name != "t01" {
			assert.Equal(t, tags, after[name], "the other Targets never moved")
		}
	}
	assert.Equal(t, "0.0.3", target(r, "t01").Version, "the previous content at a new version")
	was := chartFiles(t, e.layout, "alpha/bootstrap-t01", "0.0.1")
	is := chartFiles(t, e.layout, "alpha/bootstrap-t01", "0.0.3")
	assert.Equal(t, withoutVersion(was), withoutVersion(is), "the previous content")

	again := e.render()
	assert.Equal(t, rollout.RolledBack, again.Rollouts[0].Phase, "a failed rollout stays failed")
	assert.Equal(t, publish.Unchanged, target(again, "t01").Action, "and publishes nothing more")
	assert.Equal(t, "0.0.3", target(again, "t01").Version)
}

// target is the report of Target name.
func target(r pipeline.Report, name string) pipeline.TargetReport {
	for _, tg := range r.Targets {
		if tg.Name == name {
			return tg
		}
	}
	return pipeline.TargetReport{}
}

// withoutVersion are a chart's files with its Chart.yaml's version line
// left out.
func withoutVersion(files map[string]string) map[string]string {
	out := map[string]string{}
	for name, text := range files {
		if name == "Chart.yaml" {
			var kept []string
			for _, line := range strings.Split(text, "\n") {
				if !strings.HasPrefix(line, "version: ") {
					kept = append(kept, line)
				}
			}
			text = strings.Join(kept, "\n")
		}
		out[name] = text
	}
	return out
}

// TestRolloutVerbs (done-when 3): pause holds the next wave, resume lets it
// go on, a wave with approval waits for approve, abort holds every Target
// where it is, undo rolls every admitted Target back; a dry run shows the
// decision and writes nothing; status --exit-code says 2 while it goes on
// and 1 once aborted.
func TestRolloutVerbs(t *testing.T) {
	e := newRolloutEnv(t)
	rolloutInput(t, e.input, 1, "")
	e.render()
	rolloutInput(t, e.input, 2, `apiVersion: solar.opendefense.cloud/v1alpha1
kind: Rollout
metadata: {name: web, namespace: alpha}
spec:
  waves:
    - {name: canary, count: 1, approval: true}
    - {name: rest}
`)
	verb := func(args ...string) (int, string) {
		code, stdout, stderr := solar(t, append(append([]string{"rollout"}, args...), "web", "-n", "alpha", "--out", e.layout)...)
		return code, stdout + stderr
	}
	r := e.render()
	e.reportReady(r, "t01")
	code, out := verb("pause")
	require.Equal(t, 0, code, out)
	r = e.render()
	assert.Equal(t, rollout.Paused, r.Rollouts[0].Phase)
	assert.Len(t, members(r)[rollout.Held], 11, "paused: no new wave")
	code, out = verb("status", "--exit-code")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "paused")

	code, out = verb("resume")
	require.Equal(t, 0, code, out)
	r = e.render()
	assert.Equal(t, rollout.Waiting, r.Rollouts[0].Phase)
	assert.Contains(t, r.Rollouts[0].Message, "waits for approval")

	code, out = verb("approve")
	require.Equal(t, 0, code, out)
	code, stdout, stderr := solar(t, "render", "-o", "json", "--dry-run", "--out", e.layout, "--kubeconfig", e.api.Kubeconfig, e.input)
	require.Equal(t, 0, code, stderr)
	assert.Len(t, members(decodeReport(t, stdout))[rollout.Admitted], 11, "the dry run shows the rest admitted")
	code, out = verb("status", "-o", "json")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, `"phase": "Waiting"`, "and writes nothing")

	r = e.render()
	assert.Len(t, members(r)[rollout.Admitted], 11, "approved: the rest starts")
	before := e.bootstraps()
	code, out = verb("abort")
	require.Equal(t, 0, code, out)
	r = e.render()
	assert.Equal(t, rollout.Aborted, r.Rollouts[0].Phase)
	assert.Equal(t, before, e.bootstraps(), "abort holds every Target where it is")
	code, out = verb("status", "--exit-code")
	assert.Equal(t, 1, code, out)

	code, out = verb("undo")
	require.Equal(t, 0, code, out)
	r = e.render()
	assert.Equal(t, rollout.RolledBack, r.Rollouts[0].Phase)
	assert.Len(t, members(r)[rollout.Reverted], 12, "undo rolls every admitted Target back")
	for _, tg := range r.Targets {
		assert.Equal(t, withoutVersion(chartFiles(t, e.layout, tg.Repository, "0.0.1")), withoutVersion(chartFiles(t, e.layout, tg.Repository, tg.Version)), tg.Name)
	}
}

// TestRolloutRefusesAScopedRun: a run of one --target or of a label
// selector that reaches a Target a Rollout governs is refused before
// anything is published (the rollout decides which of them get a change);
// one that reaches none of them runs as ever.
func TestRolloutRefusesAScopedRun(t *testing.T) {
	dir := t.TempDir()
	input := testenv.RolloutInput(2, testenv.ThreeWaves("10m", "Halt")) + `---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Registry
metadata: {name: render, namespace: beta}
spec: {hostname: registry.example.com, targetPullSecretName: pull}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Target
metadata: {name: other, namespace: beta}
spec: {renderRegistryRef: {name: render}}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "input.yaml"), []byte(input), 0o644))
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := solar(t, "render", "--out", out, "-n", "alpha", "--target", "t03", dir)
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stderr, "Rollout alpha/web governs t03: publish its whole namespace (without --target or -l)")
	_, err := os.Stat(filepath.Join(out, "alpha"))
	assert.True(t, os.IsNotExist(err), "nothing published")

	code, stdout, stderr = solar(t, "render", "--out", out, "-n", "beta", "--target", "other", dir)
	assert.Equal(t, 0, code, "a Target no Rollout governs: %s\n%s", stdout, stderr)
}

// TestRolloutFailedHoldsUntilItsContentChanges (review finding 1.3): a
// halted rollout stays halted through edits that do not change what its
// failed canary would get (a new Target here): the next Target is not made
// the canary of the same broken content, and the new Target is held too;
// new content for the canary starts a new revision.
func TestRolloutFailedHoldsUntilItsContentChanges(t *testing.T) {
	e := newRolloutEnv(t)
	rolloutInput(t, e.input, 1, "")
	e.render()
	rolloutInput(t, e.input, 3, testenv.ThreeWaves("2s", "Halt"))
	e.render()
	time.Sleep(2 * time.Second)
	r := e.render()
	require.Equal(t, rollout.Halted, r.Rollouts[0].Phase)
	before := e.bootstraps()

	more := testenv.RolloutInput(3, testenv.ThreeWaves("2s", "Halt")) + `---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Target
metadata: {name: t13, namespace: alpha}
spec: {renderRegistryRef: {name: render}}
`
	require.NoError(t, os.WriteFile(filepath.Join(e.input, "input.yaml"), []byte(more), 0o644))
	r = e.render()
	assert.Equal(t, rollout.Halted, r.Rollouts[0].Phase, "still halted")
	assert.Equal(t, []string{"t01"}, members(r)[rollout.Failed])
	assert.Empty(t, members(r)[rollout.Admitted], "no new canary of the same content")
	assert.Equal(t, rollout.Held, target(r, "t13").Rollout.State, "a new Target is held too")
	assert.Equal(t, before, e.bootstraps(), "nothing published")

	rolloutInput(t, e.input, 4, testenv.ThreeWaves("2s", "Halt"))
	r = e.render()
	assert.Equal(t, rollout.Progressing, r.Rollouts[0].Phase, "new content: a new revision")
	assert.Equal(t, []string{"t01"}, members(r)[rollout.Admitted])
}
