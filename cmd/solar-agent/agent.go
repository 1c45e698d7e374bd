package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/internal/buildinfo"
)

type agent struct {
	// client reaches the SolAr API server; cluster (nil: no access) the
	// Target's own cluster, where Flux runs.
	client    dynamic.Interface
	cluster   dynamic.Interface
	namespace string
	target    string
	// maxAge is the longest time between two writes: an unchanged state is
	// written again (a heartbeat) once the last report is this old.
	maxAge time.Duration
	// writes counts the reports written.
	writes atomic.Int64
	log    *slog.Logger
	now    func() time.Time
	// backoff is the first wait after a failed report; it doubles up to the
	// interval.
	backoff time.Duration
	// ready: the last report went through (served as /readyz).
	ready atomic.Bool
}

// flags are solar-agent's flags.
type flags struct {
	kubeconfig, clusterKubeconfig, target, namespace, healthAddr string
	interval, maxAge                                             time.Duration
	once                                                         bool
}

const agentLong = `solar-agent reads, every --interval, the OCIRepositories and HelmReleases solar's
charts made on its own cluster (read-only, in every namespace: the agent
chart's ClusterRole) and writes its Target's TargetReport in SolAr's shape:
per release its phase (Pending, Progressing, Ready, Degraded, Failed), the
release chart version live, and the Flux conditions verbatim.

It writes only when that changed, or when the last report is older than
--max-age (default 10 intervals): a heartbeat, so that a lastReportTime
older than that says the agent stopped. The agent's version and host are
annotations of the report.

The kubeconfig is the one solar renders into the agent release: its token may
only read this Target and read and update this TargetReport. The cluster is
reached with the Pod's ServiceAccount, or --cluster-kubeconfig.

When the API server refuses the token (401: revoked or expired; 403: not this
Target's), the agent says so and retries with backoff, up to --interval: a
rotated token arrives with the next agent chart. With --once it reports once
and exits 1 on failure.

With --health-addr it serves /healthz (alive) and /readyz (200 once the last
report went through, 503 otherwise) for the probes of its Deployment.`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f flags
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cmd := &cobra.Command{
		Use:   "solar-agent --kubeconfig FILE --target NAME",
		Short: "Report what Flux does on this Target's cluster to the SolAr API server",
		Long:  agentLong,
		Example: `  solar-agent --kubeconfig /etc/solar/kubeconfig --target edge-1
  solar-agent --kubeconfig kubeconfig --target edge-1 --once`,
		Args:          cobra.NoArgs,
		Version:       buildinfo.Read().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return f.start(cmd.Context(), log) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the SolAr API server (default $KUBECONFIG)")
	fl.StringVar(&f.target, "target", "", "name of this Target (required)")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the Target (default: the kubeconfig's)")
	fl.StringVar(&f.clusterKubeconfig, "cluster-kubeconfig", "", "kubeconfig of this Target's cluster, where Flux runs (default: the Pod's ServiceAccount)")
	fl.DurationVar(&f.interval, "interval", time.Minute, "time between two looks at the cluster")
	fl.DurationVar(&f.maxAge, "max-age", 0, "write an unchanged report again once the last is this old (default 10 intervals)")
	fl.BoolVar(&f.once, "once", false, "report once and exit")
	fl.StringVar(&f.healthAddr, "health-addr", "", "address of /healthz and /readyz, e.g. :8080 (default: none)")
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "solar-agent: %v\n", err)
		return 1
	}
	return 0
}

// start builds the agent of the flags and reports once (--once) or until
// ctx ends, serving the probes with --health-addr.
func (f flags) start(ctx context.Context, log *slog.Logger) error {
	a, err := f.agent(log)
	if err != nil {
		return err
	}
	if f.once {
		return a.report(ctx, true)
	}
	if f.healthAddr != "" {
		ln, err := net.Listen("tcp", f.healthAddr)
		if err != nil {
			return fmt.Errorf("--health-addr: %w", err)
		}
		srv := &http.Server{Handler: a.health(), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln) //nolint:errcheck // ends with Close below
		defer srv.Close()
		log.Info("serving /healthz and /readyz", "addr", ln.Addr().String())
	}
	a.loop(ctx, f.interval)
	return nil
}

// agent is the agent the flags say: its clients of the SolAr API server
// and of its cluster.
func (f flags) agent(log *slog.Logger) (*agent, error) {
	if f.target == "" {
		return nil, errors.New("--target is required")
	}
	loader := &clientcmd.ClientConfigLoadingRules{ExplicitPath: f.kubeconfig}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loader, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	namespace := f.namespace
	if namespace == "" {
		if namespace, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("reading the namespace of the kubeconfig: %w", err)
		}
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cluster, err := clusterClient(f.clusterKubeconfig, log)
	if err != nil {
		return nil, err
	}
	maxAge := f.maxAge
	if maxAge == 0 {
		maxAge = 10 * f.interval
	}
	return &agent{client: client, cluster: cluster, namespace: namespace, target: f.target, log: log, now: time.Now,
		backoff: 5 * time.Second, maxAge: maxAge}, nil
}

// loop reports every interval; after a failure it retries sooner, waiting
// a.backoff and doubling up to the interval.
func (a *agent) loop(ctx context.Context, interval time.Duration) {
	backoff := a.backoff
	for {
		wait := interval
		err := a.report(ctx, false)
		a.ready.Store(err == nil)
		if err != nil {
			wait = min(backoff, interval)
			backoff = min(backoff*2, interval)
			a.log.Error("report failed", "error", err, "retry", wait)
		} else {
			backoff = a.backoff
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// health serves the probes: /healthz while the process runs, /readyz while
// the last report went through.
func (a *agent) health() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.ready.Load() {
			http.Error(w, "no report went through yet, or the last one failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

func (a *agent) explain(doing string, err error) error {
	name := a.namespace + "/" + a.target
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s %s: the API server refused this agent's token (401 Unauthorized): it was revoked or has expired; the next agent chart brings a new one: %w", doing, name, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s %s: this agent's credential does not allow it (403 Forbidden): is --target this agent's own Target? %w", doing, name, err)
	}
	return fmt.Errorf("%s %s: %w", doing, name, err)
}

// clusterClient reaches this Target's cluster: with the kubeconfig given,
// else the Pod's ServiceAccount. Outside a Pod, without one, the agent runs
// without (its reports say so: FluxReadable Unknown).
func clusterClient(kubeconfig string, log *slog.Logger) (dynamic.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			log.Warn("no access to this cluster: not in a Pod, and no --cluster-kubeconfig; releases are not reported")
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the cluster's kubeconfig: %w", err)
	}
	return dynamic.NewForConfig(cfg)
}
