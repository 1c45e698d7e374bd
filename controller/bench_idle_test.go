package controller

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// BenchmarkControllerIdle10000Targets: 10,000 Targets with agents
// (scripts/genobjects, 100 per namespace, release-0 annotated
// target-credential; SOLAR_BENCH_TARGETS sets another count) in a real API
// server, one controller replica: from cold until every Target is Ready
// with its credential issued, one resync of every namespace, then one idle
// interval (every namespace run again, unchanged), whose API requests
// beyond the watches are counted. It runs once whatever b.N is.
func BenchmarkControllerIdle10000Targets(b *testing.B) {
	targets := 10000
	if n, err := strconv.Atoi(os.Getenv("SOLAR_BENCH_TARGETS")); err == nil && n > 0 {
		targets = n
	}
	const per = 100
	e := startGenerated(b, targets, per, func(o *load.Object) {
		if o.Kind == api.KindRelease && o.Name == "release-0" {
			u := &unstructured.Unstructured{Object: o.Fields}
			u.SetAnnotations(map[string]string{api.AnnotationTargetCredential: "true"})
		}
	})
	e.api.CreateNamespaces(b, "solar-system")
	_, err := e.dyn.Resource(gvr(api.KindPipelineConfig)).Namespace("solar-system").Create(context.Background(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": api.APIVersion, "kind": api.KindPipelineConfig,
			"metadata": map[string]any{"name": "solar", "namespace": "solar-system"},
			"spec":     map[string]any{"agent": map[string]any{"apiserverURL": e.api.URL}}}}, metav1.CreateOptions{})
	require.NoError(b, err)
	namespaces := (targets + per - 1) / per

	counted := newAPICounter()
	log := &testenv.LockedBuffer{}
	opts := Options{Config: counted.config(e.api.Config), Registry: e.registryOptions(),
		Pipeline: pipeline.Options{LoadOptions: pipeline.LoadOptions{CacheDir: b.TempDir()}},
		// Minting 10,000 credentials is about 90,000 requests: at the
		// default 50 a second the cold start alone would take half an hour.
		QPS: 1000, Burst: 2000, Interval: max(time.Minute, time.Duration(namespaces)*2*time.Second),
		Metrics: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(log, nil))}
	b.ResetTimer()
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = Run(ctx, opts) }()
	defer func() { cancel(); <-done }()

	// Cold: every namespace changed, every credential issued.
	require.Eventually(b, func() bool { return len(ranSince(log, 0, "true")) >= namespaces }, time.Hour, time.Second, "every namespace published")
	cold := time.Since(start)
	mark := len(log.String())
	require.Eventually(b, func() bool { return len(ranSince(log, mark, "false")) >= namespaces }, time.Hour, time.Second, "a resync of every namespace")
	before, _ := counted.snapshot()
	mark = len(log.String())
	idleStart := time.Now()
	require.Eventually(b, func() bool { return len(ranSince(log, mark, "false")) >= namespaces }, time.Hour, time.Second, "the idle interval")
	idle := time.Since(idleStart)
	after, _ := counted.snapshot()
	lines, n := since(before, after)
	require.NotContains(b, log.String(), "level=ERROR")

	b.ReportMetric(float64(n), "idle-requests")
	b.ReportMetric(cold.Seconds(), "cold-s")
	writeFigure(b, fmt.Sprintf("controller-idle-%d", targets), fmt.Sprintf(
		"%d Targets with agents, one replica: cold (every chart and credential) %s; an idle interval (%d namespaces run again, unchanged, in %s): %d API requests beyond the watches%s",
		targets, cold.Round(time.Second), namespaces, idle.Round(100*time.Millisecond), n, linesOr(lines)))
}

// ranSince are the namespaces the controller's log says ran, with
// changed=changed, after the log's first from bytes.
func ranSince(log *testenv.LockedBuffer, from int, changed string) map[string]bool {
	re := regexp.MustCompile(`reconciled namespace=(\S+) targets=\d+ changed=` + changed + ` .* error=<nil>`)
	out := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(log.String()[from:], -1) {
		out[m[1]] = true
	}
	return out
}

func linesOr(lines string) string {
	if lines == "" {
		return ""
	}
	return " (" + lines + ")"
}
