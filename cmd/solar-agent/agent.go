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
	"runtime"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/internal/buildinfo"
	"github.com/solar-pipeline/solar/renderer/credential"
)

type agent struct {
	client    dynamic.Interface
	namespace string
	target    string
	log       *slog.Logger
	now       func() time.Time
	// backoff is the first wait after a failed report; it doubles up to the
	// interval.
	backoff time.Duration
	// ready: the last report went through (served as /readyz).
	ready atomic.Bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var kubeconfig, target, namespace, healthAddr string
	var interval time.Duration
	var once bool
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cmd := &cobra.Command{
		Use:   "solar-agent --kubeconfig FILE --target NAME",
		Short: "Report this Target's state to the SolAr API server",
		Long: `solar-agent reads its own Target from the SolAr API server and updates its own
TargetReport (spec.lastReportTime, agentVersion and facts) every --interval.
The kubeconfig is the one solar renders into the agent release: its token may
only read this Target and read and update this TargetReport.

When the API server refuses the token (401: revoked or expired; 403: not this
Target's), the agent says so and retries with backoff, up to --interval: a
rotated token arrives with the next agent chart. With --once it reports once
and exits 1 on failure.

With --health-addr it serves /healthz (alive) and /readyz (200 once the last
report went through, 503 otherwise) for the probes of its Deployment.`,
		Example: `  solar-agent --kubeconfig /etc/solar/kubeconfig --target edge-1
  solar-agent --kubeconfig kubeconfig --target edge-1 --once`,
		Args:          cobra.NoArgs,
		Version:       buildinfo.Read().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" {
				return errors.New("--target is required")
			}
			loader := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
			cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loader, &clientcmd.ConfigOverrides{})
			cfg, err := cc.ClientConfig()
			if err != nil {
				return fmt.Errorf("reading the kubeconfig: %w", err)
			}
			if namespace == "" {
				if namespace, _, err = cc.Namespace(); err != nil {
					return fmt.Errorf("reading the namespace of the kubeconfig: %w", err)
				}
			}
			client, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			a := &agent{client: client, namespace: namespace, target: target, log: log, now: time.Now, backoff: 5 * time.Second}
			if once {
				return a.report(cmd.Context())
			}
			if healthAddr != "" {
				ln, err := net.Listen("tcp", healthAddr)
				if err != nil {
					return fmt.Errorf("--health-addr: %w", err)
				}
				srv := &http.Server{Handler: a.health(), ReadHeaderTimeout: 5 * time.Second}
				go srv.Serve(ln) //nolint:errcheck // ends with Close below
				defer srv.Close()
				log.Info("serving /healthz and /readyz", "addr", ln.Addr().String())
			}
			a.loop(cmd.Context(), interval)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the SolAr API server (default $KUBECONFIG)")
	fl.StringVar(&target, "target", "", "name of this Target (required)")
	fl.StringVarP(&namespace, "namespace", "n", "", "namespace of the Target (default: the kubeconfig's)")
	fl.DurationVar(&interval, "interval", time.Minute, "time between reports")
	fl.BoolVar(&once, "once", false, "report once and exit")
	fl.StringVar(&healthAddr, "health-addr", "", "address of /healthz and /readyz, e.g. :8080 (default: none)")
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "solar-agent: %v\n", err)
		return 1
	}
	return 0
}

// loop reports every interval; after a failure it retries sooner, waiting
// a.backoff and doubling up to the interval.
func (a *agent) loop(ctx context.Context, interval time.Duration) {
	backoff := a.backoff
	for {
		wait := interval
		err := a.report(ctx)
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

// report reads the Target and updates its TargetReport.
func (a *agent) report(ctx context.Context) error {
	if _, err := a.client.Resource(credential.TargetGVR).Namespace(a.namespace).Get(ctx, a.target, metav1.GetOptions{}); err != nil {
		return a.explain("reading Target", err)
	}
	reports := a.client.Resource(credential.TargetReportGVR).Namespace(a.namespace)
	report, err := reports.Get(ctx, a.target, metav1.GetOptions{})
	if err != nil {
		return a.explain("reading TargetReport", err)
	}
	host, _ := os.Hostname()
	spec := map[string]any{
		"lastReportTime": a.now().UTC().Format(time.RFC3339Nano),
		"agentVersion":   buildinfo.Read().Version,
		"facts":          map[string]any{"os": runtime.GOOS, "arch": runtime.GOARCH, "hostname": host},
	}
	if err := unstructured.SetNestedMap(report.Object, spec, "spec"); err != nil {
		return err
	}
	if _, err := reports.Update(ctx, report, metav1.UpdateOptions{}); err != nil {
		return a.explain("updating TargetReport", err)
	}
	a.log.Info("reported", "target", a.namespace+"/"+a.target, "time", spec["lastReportTime"])
	return nil
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
