package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/store"
)

// env is an API server holding the examples and a registry.
type env struct {
	api      *testenv.APIServer
	registry *testenv.Registry
	dyn      dynamic.Interface
	examples []string
}

func startEnv(t *testing.T) *env { return startEnvWith(t, testenv.RegistryOptions{TLS: true}) }

func startEnvWith(t *testing.T, ro testenv.RegistryOptions) *env {
	return startEnvOn(t, testenv.StartAPIServer(t), ro)
}

// startEnvOn is startEnvWith on an API server already started (a cluster's).
func startEnvOn(t *testing.T, api *testenv.APIServer, ro testenv.RegistryOptions) *env {
	reg := testenv.StartRegistry(t, ro)
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	root := testenv.Root(t)
	e := &env{api: api, registry: reg, dyn: dyn}
	for _, ns := range []string{"shared", "alpha", "beta"} {
		e.examples = append(e.examples, filepath.Join(root, "examples", ns))
	}
	api.CreateNamespaces(t, "shared", "alpha", "beta")
	objs, problems, _ := load.Paths(e.examples, load.Options{})
	require.Empty(t, problems)
	for _, o := range objs {
		// Strict: the generated CRDs take the examples as they are.
		_, err := dyn.Resource(gvr(o.Kind)).Namespace(o.Namespace).Create(context.Background(),
			&unstructured.Unstructured{Object: o.Fields}, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err, "%s %s/%s", o.Kind, o.Namespace, o.Name)
	}
	return e
}

func gvr(kind string) schema.GroupVersionResource {
	return kube.GVR(kind)
}

// options are a controller's options against e, quick to retry and to
// take over.
func (e *env) options(t *testing.T) Options {
	return Options{
		Config:   e.api.Config,
		Registry: e.registryOptions(),
		Pipeline: pipeline.Options{LoadOptions: pipeline.LoadOptions{CacheDir: t.TempDir()}},
		Interval: time.Hour, RetryMin: 100 * time.Millisecond, RetryMax: 2 * time.Second, ConfigNamespace: "shared",
		Metrics: prometheus.NewRegistry(),
		Log:     slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// start runs a controller until the test ends.
func start(t *testing.T, opts Options) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	stop = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("controller: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the controller did not stop within a minute")
		}
	}
	t.Cleanup(func() {
		select {
		case <-ctx.Done():
		default:
			stop()
		}
	})
	return stop
}

// targetStatusOf reads Target ns/name's status.
func (e *env) targetStatusOf(t *testing.T, ns, name string) (targetStatus, string) {
	u, err := e.dyn.Resource(gvr("Target")).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	var st targetStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		require.NoError(t, fromUnstructured(raw, &st))
	}
	return st, u.GetResourceVersion()
}

var allTargets = [][2]string{{"alpha", "edge-1"}, {"alpha", "edge-2"}, {"beta", "plant-1"}, {"beta", "plant-2"}}

// waitReady waits until every Target is Ready at generation and returns
// their bootstrap charts.
func (e *env) waitReady(t *testing.T, within time.Duration) map[[2]string]bootstrap {
	out := map[[2]string]bootstrap{}
	require.Eventually(t, func() bool {
		for _, id := range allTargets {
			st, _ := e.targetStatusOf(t, id[0], id[1])
			c := findCondition(st.Conditions, "Ready")
			if c == nil || c.Status != metav1.ConditionTrue || st.Bootstrap == nil {
				return false
			}
			out[id] = *st.Bootstrap
		}
		return true
	}, within, 200*time.Millisecond, "every Target Ready")
	return out
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// TestControllerPublishesAsTheCLIWould: from the examples in the API server,
// the controller publishes every Target's charts and says so in its status;
// solar publish of the same objects from files then finds every chart
// unchanged, at the same versions and digests; a resync writes nothing; a
// changed Release re-renders exactly the Targets it reaches.
func TestControllerPublishesAsTheCLIWould(t *testing.T) {
	e := startEnv(t)
	opts := e.options(t)
	opts.LeaderElection = false
	opts.Interval = 2 * time.Second
	reg := prometheus.NewRegistry()
	opts.Metrics = reg
	start(t, opts)
	first := e.waitReady(t, 2*time.Minute)
	for id, b := range first {
		assert.Equal(t, "0.0.1", b.Version, id)
		st, _ := e.targetStatusOf(t, id[0], id[1])
		assert.Equal(t, "Succeeded", findCondition(st.Conditions, "Ready").Reason, id)
		assert.Nil(t, findCondition(st.Conditions, "Reconciling"), id)
		assert.Nil(t, findCondition(st.Conditions, "Stalled"), id)
		if id[0] == "alpha" { // alpha's Targets get the agent release
			cred := findCondition(st.Conditions, "AgentCredentialReady")
			require.NotNil(t, cred, id)
			assert.Equal(t, "Issued", cred.Reason, id)
		}
	}

	// The CLI, from the files, against the same registry: all unchanged.
	e.assertCLIUnchanged(t, first)

	// Resyncs of unchanged input write nothing: no chart, no status.
	versions := map[[2]string]string{}
	for _, id := range allTargets {
		_, versions[id] = e.targetStatusOf(t, id[0], id[1])
	}
	runs := counter(t, reg, "solar_namespace_runs_total", "unchanged")
	creates := counter(t, reg, "solar_charts_total", "create") + counter(t, reg, "solar_charts_total", "update")
	require.Eventually(t, func() bool { return counter(t, reg, "solar_namespace_runs_total", "unchanged") >= runs+4 },
		time.Minute, 100*time.Millisecond, "two resyncs of both namespaces")
	for _, id := range allTargets {
		_, rv := e.targetStatusOf(t, id[0], id[1])
		assert.Equal(t, versions[id], rv, "%v: a resync rewrote the status", id)
	}
	assert.Equal(t, creates, counter(t, reg, "solar_charts_total", "create")+counter(t, reg, "solar_charts_total", "update"))
	assert.Zero(t, counter(t, reg, "solar_namespace_runs_total", "error"))

	// A changed Release (alpha/metrics, bound to alpha/edge-1 by its Profile
	// and to beta/plant-1 by a ReleaseBinding of alpha) re-renders exactly
	// the Targets it reaches.
	e.changeRelease(t, "alpha", "metrics", map[string]any{"replicas": int64(2)})
	want := map[[2]string]string{{"alpha", "edge-1"}: "0.0.2", {"alpha", "edge-2"}: "0.0.1", {"beta", "plant-1"}: "0.0.2", {"beta", "plant-2"}: "0.0.1"}
	e.waitVersions(t, want, time.Minute)
	for id, b := range e.waitReady(t, time.Minute) {
		assert.Equal(t, want[id], b.Version, id)
	}
}

// assertCLIUnchanged: solar publish --dry-run of the examples' files finds
// every Target's bootstrap chart unchanged, at the version and digest the
// controller published (bootstraps).
func (e *env) assertCLIUnchanged(t *testing.T, bootstraps map[[2]string]bootstrap) {
	t.Helper()
	report, _, _ := e.publishFiles(t, e.examples, true)
	require.Len(t, report.Targets, len(allTargets))
	for _, tr := range report.Targets {
		id := fmt.Sprintf("%s/%s", tr.Namespace, tr.Name)
		b := bootstraps[[2]string{tr.Namespace, tr.Name}]
		assert.Equal(t, []string{"unchanged", b.Version, b.Digest}, []string{tr.Action, tr.Version, tr.Digest}, id)
	}
}

// counter is the value of a counter with one label value.
func counter(t testing.TB, reg *prometheus.Registry, name, label string) float64 {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// publishFiles is solar publish of the files of paths to e's registry,
// every namespace at once, minting with e's API server when it has one: the
// report, how long it took and the registry requests it sent.
func (e *env) publishFiles(tb testing.TB, paths []string, dryRun bool) (*pipeline.Report, time.Duration, float64) {
	var requests atomic.Int64
	ro := e.registryOptions()
	ro.Wrap = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) { requests.Add(1); return rt.RoundTrip(r) })
	}
	ctx, start := context.Background(), time.Now()
	store, err := pipeline.OpenStore(ctx, pipeline.StoreOptions{Registry: &ro})
	require.NoError(tb, err)
	defer store.Close()
	opts := pipeline.Options{LoadOptions: pipeline.LoadOptions{Paths: paths}, DryRun: dryRun}
	if e.api != nil {
		opts.Kubeconfig = e.api.Kubeconfig
	}
	opts.Registry = store.Registry
	plan, err := pipeline.NewPlan(ctx, opts)
	require.NoError(tb, err)
	require.False(tb, plan.Problems.HasErrors(), "%v", plan.Problems)
	report, err := pipeline.Run(ctx, plan, store.Store, opts)
	require.NoError(tb, err)
	return report, time.Since(start), float64(requests.Load())
}

func (e *env) registryOptions() store.RemoteOptions {
	return store.RemoteOptions{Host: e.registry.Host, Prefix: "solar", Username: e.registry.Username,
		Password: e.registry.Password, CAFile: e.registry.CAFile, PlainHTTP: e.registry.CAFile == ""}
}
