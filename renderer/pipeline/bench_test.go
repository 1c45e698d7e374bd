package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/resolve"
	"github.com/solar-pipeline/solar/renderer/store"
)

// benchPlan resolves namespaces × targets Targets, each getting 5 Releases
// through empty-selector Profiles: 10,000 bootstrap charts and, with 100
// namespaces, 500 release charts.
func benchPlan(b *testing.B, namespaces, targets int) *resolve.Plan {
	return benchPlanWith(b, namespaces, targets, 0)
}

// benchPlanWith is benchPlan with release-0's replicaCount raised by more:
// a values change that reaches every Target.
func benchPlanWith(b *testing.B, namespaces, targets, more int) *resolve.Plan {
	var src strings.Builder
	for n := range namespaces {
		ns := fmt.Sprintf("ns-%03d", n)
		fmt.Fprintf(&src, "---\nkind: Registry\nmetadata: {name: render, namespace: %s}\nspec: {hostname: registry.example.com, targetPullSecretName: pull}\n", ns)
		for r := range 5 {
			fmt.Fprintf(&src, `---
kind: Release
metadata: {name: release-%[2]d, namespace: %[1]s, labels: {tier: t%[2]d}}
spec:
  chart: {repository: registry.example.com/charts/app-%[2]d, tag: 1.0.%[2]d}
  targetNamespace: apps
  values: {replicaCount: %[3]d, image: {tag: "1.0.0"}}
---
kind: Profile
metadata: {name: profile-%[2]d, namespace: %[1]s}
spec: {releaseRef: {name: release-%[2]d}, targetSelector: {}}
`, ns, r, r+map[bool]int{true: more}[r == 0])
		}
		for t := range targets {
			fmt.Fprintf(&src, "---\nkind: Target\nmetadata: {name: target-%d, namespace: %s}\nspec: {renderRegistryRef: {name: render}, userdata: {site: s%d}}\n", t, ns, t)
		}
	}
	objs, problems := load.Bytes("bench.yaml", []byte(src.String()), load.Options{})
	require.Empty(b, problems)
	return testenv.Plan(b, objs)
}

// BenchmarkRender10kTargets renders, packages and writes to a new OCI layout
// 10,000 Targets × 5 Releases: 10,500 charts. Reported: charts/s.
func BenchmarkRender10kTargets(b *testing.B) {
	p := plan(benchPlan(b, 100, 100))
	ctx := context.Background()
	b.ReportAllocs()
	charts := 0
	for b.Loop() {
		l, err := store.OpenLayout(ctx, filepath.Join(b.TempDir(), "out"), store.LayoutOptions{})
		require.NoError(b, err)
		r, err := Run(ctx, p, l, Options{})
		require.NoError(b, err)
		require.NoError(b, l.Save(ctx))
		require.NoError(b, l.Close())
		charts += len(actions(r))
	}
	b.ReportMetric(float64(charts)/b.Elapsed().Seconds(), "charts/s")
}

// BenchmarkDiffObjects1000Targets is solar diff of 1,000 Targets × 5
// Releases after a values change of one Release that reaches them all: each
// Target's chain rendered before and after with Helm's engine, the changed
// release descended into. Reported: Targets/s.
func BenchmarkDiffObjects1000Targets(b *testing.B) {
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, filepath.Join(b.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(b, err)
	defer l.Close()
	_, err = Run(ctx, plan(benchPlan(b, 10, 100)), l, Options{})
	require.NoError(b, err)
	changed := plan(benchPlanWith(b, 10, 100, 10))
	b.ReportAllocs()
	targets := 0
	for b.Loop() {
		d, err := Diff(ctx, changed, l, Options{}, &ObjectOptions{})
		require.NoError(b, err)
		require.NotEmpty(b, d.Objects)
		targets += len(changed.Targets)
	}
	b.ReportMetric(float64(targets)/b.Elapsed().Seconds(), "Targets/s")
}
