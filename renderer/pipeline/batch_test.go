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
	gen := t.TempDir()
	cmd := exec.Command("go", "run", "./scripts/genobjects", "-targets", "30", "-per", "4", "-out", gen)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	examples := t.TempDir()
	require.NoError(t, os.CopyFS(examples, os.DirFS(filepath.Join(root, "examples"))))
	rollout := `apiVersion: solar.opendefense.cloud/v1alpha1
kind: Rollout
metadata: {name: prod, namespace: alpha}
spec:
  selector: {matchLabels: {env: prod}}
  waves: [{name: all}]
`
	require.NoError(t, os.WriteFile(filepath.Join(examples, "rollout.yaml"), []byte(rollout), 0o644))

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
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "./scripts/genobjects", "-targets", "12", "-per", "4", "-out", dir)
	cmd.Dir = testenv.Root(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	rollout := `apiVersion: solar.opendefense.cloud/v1alpha1
kind: Rollout
metadata: {name: prod, namespace: ns-0002}
spec:
  selector: {matchLabels: {env: prod}}
  waves: [{name: all}]
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rollout.yaml"), []byte(rollout), 0o644))
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
