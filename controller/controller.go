// Package controller is solar in controller mode: it watches the SolAr kinds
// in an API server and re-plans a namespace through renderer/pipeline when
// any object it reads changes, publishing in process to a registry, as solar
// publish -n NS would.
//
// It stands on controller-runtime and Kubernetes' own machinery, as Flux's
// controllers do: a Lease elects one leader among replicas; a namespace
// label selector shards a large installation over several controllers; the
// work queue retries with backoff; /metrics, /healthz and /readyz serve
// Prometheus and the kubelet.
package controller

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Options configure a controller.
type Options struct {
	// Config connects to the SolAr API server: the objects are read and the
	// agent credentials minted there.
	Config *rest.Config
	// Pipeline are the options of every namespace's run (Registry, signing,
	// Prune, CacheDir); Objects, Namespace and RESTConfig are set per run.
	Pipeline pipeline.Options
	// Registry is where the charts are published; its Wrap, when set, is
	// kept, under the metrics' count of requests.
	Registry store.RemoteOptions
	// Concurrent is how many namespaces run at once (default 4).
	Concurrent int
	// ConfigNamespace is the namespace of the PipelineConfig (default
	// solar-system): one elsewhere is not read.
	ConfigNamespace string
	// Interval runs every namespace again after it (default 10m): a token
	// renewed on time, a repository repaired. A token due for renewal
	// sooner runs its namespace sooner.
	Interval time.Duration
	// RolloutPoll runs a namespace again after it while one of its Rollouts
	// waits on its admitted Targets' reports (default 30s).
	RolloutPoll time.Duration
	// Fleet, when set, makes the controller the fleet's pass too
	// (FleetOptions); nil: Devices and DeviceUpgrades are solar fleet
	// apply's.
	Fleet *FleetOptions
	// Shards, when more than 1, splits the namespaces into that many
	// shards by a hash of their names (ShardOf): every replica campaigns
	// for every shard's Lease (LeaderElectionID-shard-I in
	// LeaderElectionNamespace) and reconciles the namespaces of those it
	// leads, at most its share (shards / live replicas) while the others
	// are there; a shard whose replica is gone is taken over once its Lease
	// expires. LeaderElection is then per shard, not for the whole.
	Shards int
	// NamespaceSelector, when set, limits the controller to the namespaces
	// whose labels it matches: one shard of several.
	NamespaceSelector labels.Selector
	// LeaderElection elects one leader among the replicas with a Lease
	// named LeaderElectionID in LeaderElectionNamespace; LeaseDuration,
	// RenewDeadline and RetryPeriod are client-go's (15s, 10s, 2s).
	LeaderElection          bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	// MetricsAddr and ProbeAddr serve /metrics and /healthz, /readyz ("0":
	// off).
	MetricsAddr, ProbeAddr string
	// ShutdownTimeout is how long a stop waits for runs in progress (30s).
	ShutdownTimeout time.Duration
	// QPS and Burst bound the requests to the API server (50, 300: Flux's
	// defaults); client-go's own (5, 10) would make a status write of 1,000
	// Targets take minutes.
	QPS   float32
	Burst int
	// RunTimeout bounds one namespace's run (10m), and RequestTimeout each
	// request that mints a credential (30s).
	RunTimeout, RequestTimeout time.Duration
	// RetryMin and RetryMax bound the backoff of a failed run (1s, 5m).
	RetryMin, RetryMax time.Duration
	// Metrics registers the controller's metrics (default:
	// controller-runtime's registry, which /metrics serves).
	Metrics prometheus.Registerer
	Log     *slog.Logger
}

func (o *Options) defaults() {
	o.Concurrent = cmp.Or(o.Concurrent, 4)
	o.Interval = cmp.Or(o.Interval, 10*time.Minute)
	o.RolloutPoll = cmp.Or(o.RolloutPoll, 30*time.Second)
	o.ShutdownTimeout = cmp.Or(o.ShutdownTimeout, 30*time.Second)
	o.RunTimeout = cmp.Or(o.RunTimeout, 10*time.Minute)
	o.QPS, o.Burst = cmp.Or(o.QPS, 50), cmp.Or(o.Burst, 300)
	o.RequestTimeout = cmp.Or(o.RequestTimeout, 30*time.Second)
	o.RetryMin = cmp.Or(o.RetryMin, time.Second)
	o.RetryMax = cmp.Or(o.RetryMax, 5*time.Minute)
	o.LeaderElectionID = cmp.Or(o.LeaderElectionID, "solar-controller")
	o.ConfigNamespace = cmp.Or(o.ConfigNamespace, "solar-system")
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Shards > 1 {
		o.LeaderElection = false
		o.LeaseDuration = cmp.Or(o.LeaseDuration, 15*time.Second)
		o.RenewDeadline = cmp.Or(o.RenewDeadline, 10*time.Second)
		o.RetryPeriod = cmp.Or(o.RetryPeriod, 2*time.Second)
		o.LeaderElectionNamespace = cmp.Or(o.LeaderElectionNamespace, podNamespace())
	}
	if o.Fleet != nil {
		f := *o.Fleet
		f.Concurrency = cmp.Or(f.Concurrency, 8)
		f.WatchRetry = cmp.Or(f.WatchRetry, 10*time.Second)
		o.Fleet = &f
	}
}

// Run runs the controller until ctx ends. A leader that loses its Lease
// (the API server did not answer within RenewDeadline) stops its work and
// campaigns again, in the same process: an API server that is down for a
// while needs no restart of the controller.
func Run(ctx context.Context, opts Options) error {
	opts.defaults()
	opts.Config = rest.CopyConfig(opts.Config)
	opts.Config.QPS, opts.Config.Burst = opts.QPS, opts.Burst
	ctrl.SetLogger(logr.FromSlogHandler(opts.Log.Handler()))
	m := newMetrics(opts.Metrics)
	registry := opts.Registry
	registry.Wrap = m.wrap
	if wrap := opts.Registry.Wrap; wrap != nil {
		// The caller's (solar controller --debug logs every request).
		registry.Wrap = func(rt http.RoundTripper) http.RoundTripper { return m.wrap(wrap(rt)) }
	}
	store, err := pipeline.OpenStore(ctx, pipeline.StoreOptions{Registry: &registry})
	if err != nil {
		return err
	}
	defer store.Close()
	opts.Pipeline.Registry = store.Registry
	// Not the manager's config: a timeout there would end its watches.
	minting := rest.CopyConfig(opts.Config)
	minting.Timeout = opts.RequestTimeout
	for {
		mgr, err := newManager(opts)
		if err != nil {
			return err
		}
		creds, err := credential.NewCache(opts.Config, cachedTarget(mgr.GetClient()))
		if err != nil {
			return err
		}
		r := &reconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), minting: minting, store: store.Store, opts: opts,
			selector: opts.NamespaceSelector, metrics: m, log: opts.Log, credentials: creds}
		if opts.Shards > 1 {
			if r.shards, err = newShards(mgr, opts); err != nil {
				return err
			}
			if err := mgr.Add(r.shards); err != nil {
				return err
			}
		}
		if err := setup(mgr, r); err != nil {
			return err
		}
		if opts.Fleet != nil {
			if err := setupFleet(ctx, mgr, &fleetReconciler{reconciler: r, store: store, fleet: *opts.Fleet}); err != nil {
				return err
			}
		}
		err = mgr.Start(ctx)
		creds.Close()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && opts.LeaderElection && strings.Contains(err.Error(), errLeaderLost):
			opts.Log.Warn("lost the Lease: the API server did not answer in time; campaigning again")
			// The lost manager stops its HTTP servers without waiting:
			// give them a moment before the next one binds their ports.
			time.Sleep(opts.RetryPeriod + time.Second)
		default:
			return err
		}
	}
}

// cachedTarget reads a Target from the manager's cache, for the minter.
func cachedTarget(c client.Reader) func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	return func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
		u := newObject(api.KindTarget)
		return u, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	}
}

// errLeaderLost is what controller-runtime's manager returns when its
// leader loses the Lease (pkg/manager/internal.go, OnStoppedLeading).
const errLeaderLost = "leader election lost"

func newManager(opts Options) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	mo := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: cmp.Or(opts.MetricsAddr, "0")},
		HealthProbeBindAddress:        cmp.Or(opts.ProbeAddr, "0"),
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &opts.ShutdownTimeout,
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	}
	// Each unset (zero) keeps client-go's default.
	for _, d := range []struct {
		set  time.Duration
		into **time.Duration
	}{{opts.LeaseDuration, &mo.LeaseDuration}, {opts.RenewDeadline, &mo.RenewDeadline}, {opts.RetryPeriod, &mo.RetryPeriod}} {
		if d.set > 0 {
			*d.into = ptr(d.set)
		}
	}
	if opts.NamespaceSelector != nil && !opts.NamespaceSelector.Empty() {
		mo.Cache = cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Namespace{}: {Label: opts.NamespaceSelector},
		}}
	}
	mgr, err := ctrl.NewManager(opts.Config, mo)
	if err != nil {
		return nil, fmt.Errorf("starting the controller manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	// Ready once the caches are filled: a replica that cannot read the API
	// server is not ready.
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("caches not synced")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return mgr, nil
}

// setup watches every kind; an event enqueues its namespace and the
// namespaces its ReferenceGrants let refer to it.
func setup(mgr ctrl.Manager, r *reconciler) error {
	changed := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{},
		predicate.AnnotationChangedPredicate{})
	b := ctrl.NewControllerManagedBy(mgr).Named("solar").WithOptions(r.controllerOptions())
	for _, kind := range api.ControllerKinds {
		b = b.Watches(newObject(kind), handler.EnqueueRequestsFromMapFunc(r.namespaces), builder.WithPredicates(changed))
	}
	b = b.Watches(&corev1.Namespace{}, joined(), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	if r.shards != nil {
		// The namespaces of a shard this replica came to lead.
		b = b.WatchesRawSource(source.Channel(r.shards.enqueue, joined()))
	}
	return b.Complete(r)
}

// controllerOptions are those of the controllers' work queues.
func (r *reconciler) controllerOptions() ctrlcontroller.Options {
	return ctrlcontroller.Options{
		MaxConcurrentReconciles: r.opts.Concurrent,
		// A manager made again after a lost Lease names its controller
		// again.
		SkipNameValidation: ptr(true),
		RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](r.opts.RetryMin, r.opts.RetryMax),
	}
}

// joined enqueues a namespace that joins the shard (its labels change).
func joined() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
	})
}

// namespaces are the work items an object's change makes: its namespace
// and the namespaces related to it (a changed ReferenceGrant's own links
// included, which the cache may no longer hold); for the PipelineConfig,
// every namespace with Targets (it sets every agent's credential).
func (r *reconciler) namespaces(ctx context.Context, o client.Object) []reconcile.Request {
	ns := []string{o.GetNamespace()}
	kind := o.GetObjectKind().GroupVersionKind().Kind
	var err error
	switch {
	case kind == api.KindPipelineConfig && o.GetNamespace() != r.opts.ConfigNamespace:
		return nil // not read
	case kind == api.KindPipelineConfig:
		var targets []unstructured.Unstructured
		targets, err = list(ctx, r.client, api.KindTarget, "")
		for i := range targets {
			ns = append(ns, targets[i].GetNamespace())
		}
	default:
		var grants []unstructured.Unstructured
		// Read only, and for every event (116,000 as the cache fills at
		// 100,000 Targets): the cache's objects, not a deep copy of every
		// grant each time.
		grants, err = list(ctx, r.client, api.KindReferenceGrant, "", client.UnsafeDisableDeepCopy)
		if u, ok := o.(*unstructured.Unstructured); ok && kind == api.KindReferenceGrant {
			grants = append(grants, *u)
		}
		ns = append(ns, related(grants, o.GetNamespace())...)
	}
	if err != nil {
		r.log.Error("finding the namespaces a change reaches", "namespace", o.GetNamespace(), "error", err)
	}
	var out []reconcile.Request
	seen := map[string]bool{}
	for _, n := range ns {
		if !seen[n] {
			seen[n] = true
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: n}})
		}
	}
	return out
}

// LeaseName is the Lease of the shard sel selects: solar-controller and a
// hash of the selector, so two shards never wait on one leader.
func LeaseName(sel labels.Selector) string {
	sum := sha256.Sum256([]byte(sel.String()))
	return "solar-controller-" + hex.EncodeToString(sum[:])[:10]
}

func ptr[T any](v T) *T { return &v }
