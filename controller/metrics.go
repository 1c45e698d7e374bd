package controller

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// metrics are the controller's own, beside controller-runtime's
// (controller_runtime_reconcile_total, _time_seconds, workqueue_*), on the
// same /metrics endpoint.
type metrics struct {
	charts   *prometheus.CounterVec
	runs     *prometheus.CounterVec
	duration prometheus.Histogram
	requests *prometheus.CounterVec
}

// newMetrics registers the metrics in reg (controller-runtime's registry
// when nil).
func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	m := &metrics{
		charts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "solar_charts_total",
			Help: "Charts a namespace's run published or found unchanged, by action (create, update, unchanged)."}, []string{"action"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "solar_namespace_runs_total",
			Help: "Runs of a namespace's plan and publish, by result (changed, unchanged, error)."}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "solar_namespace_run_duration_seconds",
			Help: "How long a namespace's plan and publish took.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "solar_registry_requests_total",
			Help: "HTTP requests sent to the registry, by method and status code (0: no response)."}, []string{"method", "code"}),
	}
	reg.MustRegister(m.charts, m.runs, m.duration, m.requests)
	return m
}

// observe counts one namespace's run.
func (m *metrics) observe(report *pipeline.Report, err error, took time.Duration) {
	m.duration.Observe(took.Seconds())
	switch {
	case err != nil:
		m.runs.WithLabelValues("error").Inc()
	case report != nil && report.Changed():
		m.runs.WithLabelValues("changed").Inc()
	default:
		m.runs.WithLabelValues("unchanged").Inc()
	}
	if report == nil {
		return
	}
	for _, t := range report.Targets {
		m.charts.WithLabelValues(t.Action).Inc()
		for _, r := range t.Releases {
			m.charts.WithLabelValues(r.Action).Inc()
		}
	}
}

// wrap counts the requests rt sends.
func (m *metrics) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		m.requests.WithLabelValues(req.Method, strconv.Itoa(code)).Inc()
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
