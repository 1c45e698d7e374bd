package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// TestBatchedRunEqualsWhole: a run that resolves and publishes a few
// namespaces at a time (Options.Batch, batches of 7 Targets here) writes the
// same layout, byte for byte, and gives the same report (Targets, problems,
// orphans, pruned versions, rollouts) as a run of the whole input: cold, then
// with one Target gone (an orphan, pruned), on a generated input of 8
// namespaces and on the examples with a Rollout.
func TestBatchedRunEqualsWhole(t *testing.T) {
	defer func(n int) { batchTargets = n }(batchTargets)
	batchTargets = 7
	root := testenv.Root(t)
	gen := generated(t, 30, 4)
	examples := t.TempDir()
	require.NoError(t, os.CopyFS(examples, os.DirFS(filepath.Join(root, "examples"))))
	writeRollout(t, examples, "alpha", `[{name: all}]`)

	for name, tc := range map[string]struct {
		dir  string
		gone bool // the second run lacks a Target: an orphan, pruned
	}{
		"generated": {dir: gen, gone: true},
		"examples":  {dir: examples},
	} {
		t.Run(name, func(t *testing.T) {
			whole, batched := t.TempDir(), t.TempDir()
			runs := 1 // a Rollout's second pass needs TargetReports
			if tc.gone {
				runs = 2
			}
			for run := range runs {
				if run == 1 && tc.gone {
					dropTarget(t, filepath.Join(tc.dir, "ns-0003.yaml"), "target-3")
				}
				a, report := runLayout(t, tc.dir, whole, false)
				b, _ := runLayout(t, tc.dir, batched, true)
				require.JSONEq(t, a, b, "run %d: the reports differ", run)
				if run == 1 && tc.gone {
					require.Len(t, report.Orphans, 1)
					require.NotNil(t, report.Orphans[0].Pruned)
				}
				if !tc.gone {
					require.NotEmpty(t, report.Rollouts)
				}
				require.Equal(t, files(t, whole), files(t, batched), "run %d: the layouts differ", run)
			}
		})
	}
}

// runLayout renders dir into the layout at out (with --prune), batched or
// not, and gives the report as JSON.
func runLayout(t *testing.T, dir, out string, batch bool) (string, *Report) {
	t.Helper()
	ctx := context.Background()
	opts := Options{LoadOptions: LoadOptions{Paths: []string{dir}},
		CredentialOptions: CredentialOptions{NoCredentials: true},
		ResolveOptions:    ResolveOptions{Batch: batch},
		PublishOptions:    PublishOptions{Prune: true, Concurrency: 2, Now: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)}}
	plan, err := NewPlan(ctx, opts)
	require.NoError(t, err)
	require.False(t, plan.Problems.HasErrors(), "%v", plan.Problems)
	l, err := store.OpenLayout(ctx, out, store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	report, err := Run(ctx, plan, l, opts)
	require.NoError(t, err)
	require.NoError(t, l.Save(ctx))
	require.NotEmpty(t, report.Targets)
	j, err := json.Marshal(report)
	require.NoError(t, err)
	return string(j), report
}

// dropTarget removes the document of the Target name from file.
func dropTarget(t *testing.T, file, name string) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	docs := strings.Split(string(data), "\n---\n")
	kept := slices.DeleteFunc(docs, func(d string) bool {
		return strings.Contains(d, "kind: Target\n") && strings.Contains(d, "name: "+name+"\n")
	})
	require.Len(t, kept, len(strings.Split(string(data), "\n---\n"))-1, "no Target %s in %s", name, file)
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(kept, "\n---\n")), 0o644))
}

// files are the layout's files with their content, by path.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fmt.Sprintf("%x", data)
		return err
	}))
	return out
}

// TestBatchedRunRefusesBeforePublishing: a batched run of a label selector
// that reaches a Target a Rollout governs, in its third namespace, is
// refused before the first batch is published, as a run of the whole is.
func TestBatchedRunRefusesBeforePublishing(t *testing.T) {
	defer func(n int) { batchTargets = n }(batchTargets)
	batchTargets = 1
	dir := generated(t, 12, 4)
	writeRollout(t, dir, "ns-0002", `[{name: all}]`)
	ctx := context.Background()
	sel, err := labels.Parse("group=g0")
	require.NoError(t, err)
	opts := Options{LoadOptions: LoadOptions{Paths: []string{dir}}, CredentialOptions: CredentialOptions{NoCredentials: true},
		ResolveOptions: ResolveOptions{Batch: true, Selector: sel}}
	plan, err := NewPlan(ctx, opts)
	require.NoError(t, err)
	layout := t.TempDir()
	l, err := store.OpenLayout(ctx, layout, store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	_, err = Run(ctx, plan, l, opts)
	require.ErrorContains(t, err, "Rollout ns-0002/prod governs")
	repos, err := l.Repositories(ctx, "")
	require.NoError(t, err)
	require.Empty(t, repos, "nothing published")
}

// TestBatchedProgressEndsAtItsTotal: a batched run's progress counts the
// Targets it publishes; Targets whose resolution fails leave its total as
// their batch resolves (as a run of the whole counts only the valid ones),
// so the last step reads done == total.
func TestBatchedProgressEndsAtItsTotal(t *testing.T) {
	defer func(n int) { batchTargets = n }(batchTargets)
	batchTargets = 2
	gen := generated(t, 6, 3)
	// Every Target of ns-0001 that gets release-0 fails to resolve: it
	// depends on a release no Target has.
	file := filepath.Join(gen, "ns-0001.yaml")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	broken := strings.Replace(string(data), "  uniqueName: app-0\n", "  uniqueName: app-0\n  dependencies: [{uniqueName: nope}]\n", 1)
	require.NotEqual(t, string(data), broken)
	require.NoError(t, os.WriteFile(file, []byte(broken), 0o644))

	ctx := context.Background()
	var steps [][2]int
	opts := Options{LoadOptions: LoadOptions{Paths: []string{gen}},
		CredentialOptions: CredentialOptions{NoCredentials: true},
		ResolveOptions:    ResolveOptions{Batch: true},
		PublishOptions:    PublishOptions{Concurrency: 1},
		Progress:          func(done, total int, _ TargetReport) { steps = append(steps, [2]int{done, total}) }}
	plan, err := NewPlan(ctx, opts)
	require.NoError(t, err)
	l, err := store.OpenLayout(ctx, t.TempDir(), store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	report, err := Run(ctx, plan, l, opts)
	require.NoError(t, err)
	require.True(t, report.Problems.HasErrors(), "ns-0001's Targets fail")
	require.NotEmpty(t, steps)
	require.Less(t, len(report.Targets), 6)
	last := steps[len(steps)-1]
	require.Equal(t, [2]int{len(report.Targets), len(report.Targets)}, last, "the last step: every published Target of the total (steps %v)", steps)
	for _, s := range steps {
		require.LessOrEqual(t, s[0], s[1], "steps %v", steps)
	}
}

// TestBatchedProgressCountsHeldTargets: Targets a Rollout holds back are
// not published, yet done: when the last batch holds some, the last step
// still reads done == total.
func TestBatchedProgressCountsHeldTargets(t *testing.T) {
	defer func(n int) { batchTargets = n }(batchTargets)
	batchTargets = 3
	gen := generated(t, 6, 3)
	writeRollout(t, gen, "ns-0001", `[{name: canary, count: 1}, {name: rest}]`)
	out := t.TempDir()
	var steps [][2]int
	run := func() *Report {
		ctx := context.Background()
		steps = nil
		opts := Options{LoadOptions: LoadOptions{Paths: []string{gen}},
			CredentialOptions: CredentialOptions{NoCredentials: true},
			ResolveOptions:    ResolveOptions{Batch: true},
			PublishOptions:    PublishOptions{Concurrency: 1, Now: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)},
			Progress:          func(done, total int, _ TargetReport) { steps = append(steps, [2]int{done, total}) }}
		plan, err := NewPlan(ctx, opts)
		require.NoError(t, err)
		require.False(t, plan.Problems.HasErrors(), "%v", plan.Problems)
		l, err := store.OpenLayout(ctx, out, store.LayoutOptions{})
		require.NoError(t, err)
		defer l.Close()
		report, err := Run(ctx, plan, l, opts)
		require.NoError(t, err)
		require.NoError(t, l.Save(ctx))
		return report
	}
	run()
	// A change to every Target of ns-0001: the canary is admitted, the
	// rest held.
	file := filepath.Join(gen, "ns-0001.yaml")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(string(data), "userdata: {site: s", "userdata: {site: t")), 0o644))
	report := run()
	held := slices.DeleteFunc(slices.Clone(report.Targets), func(r TargetReport) bool { return r.Action != Held })
	require.NotEmpty(t, held, "the Rollout held some of ns-0001's Targets back")
	require.NotEmpty(t, steps)
	require.Equal(t, [2]int{6, 6}, steps[len(steps)-1], "the last step: every Target of the total (steps %v)", steps)
}

// writeRollout writes into dir a Rollout "prod" of namespace ns over its
// env=prod Targets, with waves (YAML flow style).
func writeRollout(t *testing.T, dir, ns, waves string) {
	t.Helper()
	rollout := `apiVersion: solar.opendefense.cloud/v1alpha1
kind: Rollout
metadata: {name: prod, namespace: ` + ns + `}
spec:
  selector: {matchLabels: {env: prod}}
  waves: ` + waves + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rollout.yaml"), []byte(rollout), 0o644))
}

// generated is a directory of scripts/genobjects' input: targets Targets,
// per in each namespace, with genobjects' other flags (-change 1, say).
func generated(t *testing.T, targets, per int, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"run", "./scripts/genobjects", "-targets", fmt.Sprint(targets), "-per", fmt.Sprint(per), "-out", dir}, flags...)
	cmd := exec.Command("go", args...)
	cmd.Dir = testenv.Root(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir
}
