package controller

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// BenchmarkController1000Targets: 1,000 Targets (10 namespaces of 100, 5
// Releases each, scripts/genobjects) in a real API server, published by the
// controller to a real registry (basic auth, TLS): from cold (an empty
// registry) until every Target is Ready, then the no-op cost of a resync
// (a controller started again on the same objects runs every namespace,
// unchanged); beside it, solar publish of the same objects from files, no-op,
// in the same run. It runs once whatever b.N is.
func BenchmarkController1000Targets(b *testing.B) {
	const targets, per = 1000, 100
	api := testenv.StartAPIServer(b)
	reg := testenv.StartRegistry(b, testenv.RegistryOptions{TLS: true})
	dir := b.TempDir()
	gen := exec.Command("go", "run", "./scripts/genobjects", "-targets", fmt.Sprint(targets), "-per", fmt.Sprint(per),
		"-registry", reg.Host, "-out", dir)
	gen.Dir = testenv.Root(b)
	out, err := gen.CombinedOutput()
	require.NoError(b, err, "%s", out)
	objs, problems, _ := load.Paths([]string{dir}, load.Options{})
	require.False(b, problems.HasErrors(), "%v", problems)
	fast := rest.CopyConfig(api.Config)
	fast.QPS, fast.Burst = -1, 0 // setting up: no client-side limit
	dyn, err := dynamic.NewForConfig(fast)
	require.NoError(b, err)
	namespaces := map[string]bool{}
	for _, o := range objs {
		if !namespaces[o.Namespace] {
			namespaces[o.Namespace] = true
			api.CreateNamespaces(b, o.Namespace)
		}
		_, err := dyn.Resource(gvr(o.Kind)).Namespace(o.Namespace).Create(context.Background(),
			&unstructured.Unstructured{Object: o.Fields}, metav1.CreateOptions{})
		require.NoError(b, err)
	}
	e := &env{api: api, registry: reg, dyn: dyn}
	b.ResetTimer()

	cold, coldRequests := e.runUntil(b, len(namespaces), "changed")
	resync, resyncRequests := e.runUntil(b, len(namespaces), "unchanged")

	// The CLI, from the files, every namespace: cold into a registry of its
	// own, and no-op into the controller's.
	other := &env{registry: testenv.StartRegistry(b, testenv.RegistryOptions{TLS: true})}
	coldReport, cliCold, cliColdRequests := other.publishFiles(b, []string{dir}, false)
	require.True(b, coldReport.Changed())
	noop, cli, cliRequests := e.publishFiles(b, []string{dir}, false)
	require.False(b, noop.Changed(), "the CLI finds what the controller published unchanged")

	b.ReportMetric(cold.Seconds(), "cold-s")
	b.ReportMetric(resync.Seconds(), "resync-s")
	b.ReportMetric(float64(resyncRequests)/targets, "resync-requests/Target")
	b.ReportMetric(cli.Seconds(), "cli-noop-s")
	b.ReportMetric(cliCold.Seconds(), "cli-cold-s")
	writeFigure(b, "controller-1000", fmt.Sprintf("controller: cold %s (%.2f requests/Target), resync no-op %s (%.2f requests/Target); "+
		"solar publish of the same files: cold %s (%.2f requests/Target), no-op %s (%.2f requests/Target)",
		cold.Round(10*time.Millisecond), coldRequests/targets, resync.Round(10*time.Millisecond), resyncRequests/targets,
		cliCold.Round(10*time.Millisecond), cliColdRequests/targets, cli.Round(10*time.Millisecond), cliRequests/targets))
}

// runUntil starts a controller and measures how long until every namespace
// ran once with result (changed, unchanged), its Targets' statuses written,
// and the registry requests it sent; then stops it.
func (e *env) runUntil(b *testing.B, namespaces int, result string) (time.Duration, float64) {
	reg := prometheus.NewRegistry()
	opts := Options{Config: e.api.Config, Registry: e.registryOptions(), Interval: time.Hour,
		Pipeline: pipeline.Options{LoadOptions: pipeline.LoadOptions{CacheDir: b.TempDir()}},
		Metrics:  reg, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); _ = Run(ctx, opts) }()
	defer func() { cancel(); <-done }()
	require.Eventually(b, func() bool {
		return counter(b, reg, "solar_namespace_runs_total", result) >= float64(namespaces)
	}, 10*time.Minute, 50*time.Millisecond, "every namespace runs (%s)", result)
	took := time.Since(start)
	require.Zero(b, counter(b, reg, "solar_namespace_runs_total", "error"))
	return took, total(b, reg, "solar_registry_requests_total")
}

// total is the sum of every counter of a family.
func total(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	require.NoError(tb, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
