package pipeline

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/store"
)

// examplesOptions are the options of a run on examples (agents without a
// token), with -n ns and -l selector when not empty.
func examplesOptions(t *testing.T, examples, ns, selector string) Options {
	t.Helper()
	opts := Options{LoadOptions: LoadOptions{Paths: []string{examples}, Namespace: ns},
		CredentialOptions: CredentialOptions{NoCredentials: true}, PublishOptions: PublishOptions{Concurrency: 1},
		Log: slog.New(slog.DiscardHandler)}
	if selector != "" {
		sel, err := labels.Parse(selector)
		require.NoError(t, err)
		opts.Selector = sel
	}
	return opts
}

// names are the namespace/name of the plan's Targets.
func names(p *Plan) []string {
	out := []string{}
	for _, t := range p.Targets {
		out = append(out, t.Namespace+"/"+t.Name)
	}
	return out
}

// TestSelectorSelectsTargets: a label selector keeps the Targets whose labels
// it matches, with -n and --target; one that matches none is an error naming
// it. The Targets it leaves out stay in the input (plan.all).
func TestSelectorSelectsTargets(t *testing.T) {
	examples := filepath.Join(testenv.Root(t), "examples")
	ctx := context.Background()
	for _, tc := range []struct {
		ns, target, selector string
		want                 []string
	}{
		{"", "", "env=prod", []string{"alpha/edge-1"}},
		{"", "", "env!=prod", []string{"alpha/edge-2", "beta/plant-1", "beta/plant-2"}},
		{"", "", "env", []string{"alpha/edge-1", "alpha/edge-2"}},
		{"", "", "!env", []string{"beta/plant-1", "beta/plant-2"}},
		{"", "", "site in (north,east),tier=device", []string{"beta/plant-1"}},
		{"", "", "site notin (north)", []string{"alpha/edge-1", "alpha/edge-2", "beta/plant-2"}},
		{"beta", "", "tier=device", []string{"beta/plant-1", "beta/plant-2"}},
		{"", "edge-2", "region=eu", []string{"alpha/edge-2"}},
	} {
		opts := examplesOptions(t, examples, tc.ns, tc.selector)
		opts.Target = tc.target
		p, err := NewPlan(ctx, opts)
		require.NoError(t, err)
		require.False(t, p.Problems.HasErrors(), "%s: %v", tc.selector, p.Problems)
		assert.Equal(t, tc.want, names(p), tc.selector)
		assert.Len(t, p.all, 4, "%s: every Target of the input, selected or not", tc.selector)

		ids, problems, err := StatusTargets(opts)
		require.NoError(t, err)
		require.False(t, problems.HasErrors())
		var got []string
		for _, id := range ids {
			got = append(got, id.Namespace+"/"+id.Name)
		}
		assert.Equal(t, tc.want, got, "status: %s", tc.selector)
	}

	opts := examplesOptions(t, examples, "beta", "env=prod")
	p, err := NewPlan(ctx, opts)
	require.NoError(t, err)
	assert.Empty(t, p.Targets)
	require.True(t, p.Problems.HasErrors())
	assert.Contains(t, p.Problems.Sorted(), diag.Problem{File: examples, Message: "no Target matches -n beta -l env=prod", Severity: diag.Error})
	_, _, err = StatusTargets(opts)
	assert.EqualError(t, err, "no Target matches -n beta -l env=prod: nothing to show")
}

// TestSelectorLooksForNoOrphans: a run with a label selector, even with
// Prune, neither lists nor prunes the bootstrap repository of a Target the
// selector leaves out (still in the input), nor of a Target gone from the
// input (its labels are not known); a run of the namespace without a
// selector prunes the gone one only.
func TestSelectorLooksForNoOrphans(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	out := filepath.Join(dir, "out")
	run := func(opts Options) *Report {
		t.Helper()
		ctx := context.Background()
		p, err := NewPlan(ctx, opts)
		require.NoError(t, err)
		require.False(t, p.Problems.HasErrors(), "%v", p.Problems)
		l, err := store.OpenLayout(ctx, out, store.LayoutOptions{})
		require.NoError(t, err)
		defer l.Close()
		r, err := Run(ctx, p, l, opts)
		require.NoError(t, err)
		require.NoError(t, l.Save(ctx))
		return r
	}
	tags := func(repo string) []string {
		t.Helper()
		l, err := store.OpenLayout(context.Background(), out, store.LayoutOptions{ReadOnly: true})
		require.NoError(t, err)
		defer l.Close()
		r, err := l.Repository(context.Background(), repo)
		require.NoError(t, err)
		var got []string
		require.NoError(t, r.Tags(context.Background(), "", func(ts []string) error { got = append(got, ts...); return nil }))
		return got
	}
	run(examplesOptions(t, examples, "", ""))
	testenv.RemovePlant2(t, examples)

	for _, c := range []struct{ ns, selector string }{
		{"", "tier=device"}, {"beta", "tier=device"}, {"beta", "site=north"}, {"", "env=prod"}, {"alpha", "env=staging"},
	} {
		opts := examplesOptions(t, examples, c.ns, c.selector)
		opts.Prune = true
		r := run(opts)
		assert.NotEmpty(t, r.Targets)
		assert.Empty(t, r.Orphans, "-n %q -l %s: the Targets left out are in the input, plant-2's labels are not known", c.ns, c.selector)
	}
	for _, repo := range []string{"alpha/bootstrap-edge-1", "alpha/bootstrap-edge-2", "beta/bootstrap-plant-1", "beta/bootstrap-plant-2"} {
		assert.Equal(t, []string{"0.0.1"}, tags(repo), "%s: nothing pruned", repo)
	}

	opts := examplesOptions(t, examples, "beta", "")
	opts.Prune = true
	r := run(opts)
	require.Len(t, r.Orphans, 1, "without a selector the gone Target is an orphan")
	assert.Equal(t, "plant-2", r.Orphans[0].Name)
	require.NotNil(t, r.Orphans[0].Pruned)
	assert.Equal(t, []string{"0.0.1", "0.0.2"}, tags("beta/bootstrap-plant-2"))
	assert.Equal(t, []string{"0.0.1"}, tags("beta/bootstrap-plant-1"))
}
