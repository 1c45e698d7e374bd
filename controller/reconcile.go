package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/store"
)

// reconciler plans and publishes one namespace per request: the request's
// Name is the namespace.
type reconciler struct {
	client   client.Client
	reader   client.Reader // the API server itself, not the cache
	minting  *rest.Config  // Options.Config with a timeout on every request
	store    store.Store
	opts     Options
	selector labels.Selector
	metrics  *metrics
	log      *slog.Logger
	// credentials are the minter's informers, per namespace it mints in.
	credentials *credential.Cache
	// shards, with Options.Shards, say which namespaces this replica leads.
	shards *shards
}

// Reconcile re-plans the namespace and publishes what changed. Unchanged
// input writes nothing: the store sees the same content, the statuses are
// already what they say.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := req.Name
	if mine, err := r.inShard(ctx, ns); err != nil || !mine {
		if err == nil {
			r.log.Debug("skipped: namespace outside the shard", "namespace", ns)
		}
		return ctrl.Result{}, err
	}
	targets, err := list(ctx, r.client, api.KindTarget, ns)
	if err != nil || len(targets) == 0 {
		// A namespace without Targets has nothing of its own to publish.
		return ctrl.Result{}, err
	}
	start := time.Now()
	objs, problems, err := input(ctx, r.client, ns, r.opts.ConfigNamespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	opts := r.opts.Pipeline
	opts.Objects, opts.Namespace, opts.RESTConfig, opts.CredentialCache = objs, ns, r.minting, r.credentials
	if opts.Log == nil {
		opts.Log = r.log
	}
	// A publish runs to its end once begun: a shutdown waits for it
	// (Options.ShutdownTimeout), so no run stops between a release chart
	// and the bootstrap chart naming it.
	run, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.RunTimeout)
	defer cancel()
	plan, err := pipeline.NewPlan(run, opts)
	var report *pipeline.Report
	if err == nil && len(plan.Targets) > 0 {
		report, err = pipeline.Run(run, plan, r.store, opts)
	}
	if plan != nil {
		plan.Problems = append(problems, plan.Problems...)
	}
	result := outcome(plan, report, err, r.opts.Interval)
	if report != nil {
		result.requeue = rolloutRequeue(report.Rollouts, result.requeue, r.opts.RolloutPoll, time.Now())
	}
	result.generations = map[string]int64{}
	for _, t := range targets {
		result.generations[t.GetName()] = t.GetGeneration()
	}
	// A credential not minted is retried with backoff, as an error is.
	err = errors.Join(err, result.retry, r.writeStatuses(run, ns, result))
	r.metrics.observe(report, err, time.Since(start))
	r.log.Info("reconciled", "namespace", ns, "targets", len(targets), "changed", report != nil && report.Changed(),
		"duration", time.Since(start).Round(time.Millisecond), "next", result.requeue.Round(time.Second), "error", err)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: result.requeue}, nil
}

// inShard reports whether ns is this controller's: with a namespace
// selector, the cache holds only the namespaces it selects.
func (r *reconciler) inShard(ctx context.Context, ns string) (bool, error) {
	if r.shards != nil && !r.shards.leads(ns) {
		return false, nil
	}
	if r.selector == nil || r.selector.Empty() {
		return true, nil
	}
	var n corev1.Namespace
	err := r.client.Get(ctx, client.ObjectKey{Name: ns}, &n)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && r.selector.Matches(labels.Set(n.Labels)), err
}

// outcomes are what a run means for each Target of the namespace, and when
// to run again.
type outcomes struct {
	targets map[string]targetOutcome
	// problems are the namespace's own (load, validation): every Target
	// stalls on them.
	problems string
	// runErr is what stopped the run (the registry, the API server).
	runErr error
	// retry, when set, says which credential could not be minted: the run
	// is retried with backoff.
	retry   error
	requeue time.Duration
	// generations are those of the Targets as the run read them.
	generations map[string]int64
}

type targetOutcome struct {
	problems   string
	credential *credential.Credential
	published  *pipeline.TargetReport
}

// outcome reads the plan and report: a Target is Ready when its bootstrap
// chart is published, Stalled on problems of its input (a change of input
// runs again), retried on a credential not minted or a store that failed,
// and run again before its token is renewed and every interval.
func outcome(plan *pipeline.Plan, report *pipeline.Report, err error, interval time.Duration) outcomes {
	out := outcomes{targets: map[string]targetOutcome{}, runErr: err, requeue: interval}
	if plan == nil {
		return out
	}
	if plan.Problems.HasErrors() {
		out.problems = errorsOf(plan.Problems)
	}
	published := map[string]*pipeline.TargetReport{}
	if report != nil {
		for i := range report.Targets {
			published[report.Targets[i].Name] = &report.Targets[i]
		}
	}
	now := time.Now()
	for _, t := range plan.Targets {
		o := targetOutcome{credential: t.Credential, published: published[t.Name]}
		if t.Problems.HasErrors() {
			o.problems = errorsOf(t.Problems)
		}
		if c := t.Credential; c != nil && c.Reason == api.ReasonMintFailed && out.retry == nil {
			out.retry = fmt.Errorf("Target %s/%s: the agent credential is not issued (%s): %s", t.Namespace, t.Name, c.Reason, c.Message)
		}
		if c := t.Credential; c != nil && !c.Renew.IsZero() && c.Renew.Sub(now) < out.requeue {
			// Not sooner than a minute: a token the API server grants for
			// less than RotateBefore is due at once, every run.
			out.requeue = max(c.Renew.Sub(now), min(time.Minute, interval))
		}
		out.targets[t.Name] = o
	}
	return out
}

// errorsOf is the errors of problems, one per line, at most maxProblems of
// them: a status stays small however broken the input.
func errorsOf(problems diag.List) string {
	var b strings.Builder
	n := 0
	for _, p := range problems.Sorted() {
		if p.Severity != diag.Error {
			continue
		}
		if n++; n > maxProblems {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
	}
	if n > maxProblems {
		fmt.Fprintf(&b, "\n(and %d more: solar vet shows them all)", n-maxProblems)
	}
	return b.String()
}

const maxProblems = 10

// String says the outcome of one Target for its log line.
func (o targetOutcome) String() string {
	if o.published != nil {
		return fmt.Sprintf("%s:%s %s", o.published.Repository, o.published.Version, o.published.Action)
	}
	return o.problems
}

// rolloutRequeue is when a namespace with Rollouts runs again: after poll
// while one waits on its admitted Targets' reports (the pass that reads
// them is the next run), at its wake (a deadline, a pause's end, a window)
// when that is sooner than requeue.
func rolloutRequeue(rollouts []pipeline.RolloutReport, requeue, poll time.Duration, now time.Time) time.Duration {
	for _, r := range rollouts {
		if r.Phase == rollout.Progressing {
			requeue = min(requeue, poll)
		}
		if !r.Wake.IsZero() {
			requeue = min(requeue, max(r.Wake.Sub(now), time.Second))
		}
	}
	return requeue
}
