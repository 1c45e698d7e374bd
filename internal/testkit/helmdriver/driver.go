// Package helmdriver stands in, in tests, for Flux's helm-controller, whose
// module is not served here. It reconciles every HelmRelease of a real API
// server with the Helm 4 SDK, under the rules of helm-controller v1.6
// (github.com/fluxcd/helm-controller, read at tag v1.6.3; files cited below),
// and writes the status helm-controller writes: TestConformance replays
// scenarios recorded from the real helm-controller (testdata/helm-controller,
// recorded with -record) and holds the driver to what it left.
//
//   - a fixed pool of workers (main.go: --concurrent, default 4) takes
//     HelmReleases from a rate-limited work queue that hands a key to one
//     worker at a time, as controller-runtime does; a worker is held for the
//     whole of a Helm action, its readiness wait included;
//   - the chart's version gets +<the first 12 hex digits of the artifact
//     digest> appended, as for every chart loaded through an OCIRepository
//     (mutateChartWithSourceRevision in internal/controller/
//     helmrelease_controller.go): status.history[].chartVersion, the Helm
//     release and .Chart.Version in templates carry it;
//   - install and upgrade apply server-side (internal/action/install.go,
//     upgrade.go) and wait with kstatus until every object of the release is
//     ready, unless spec.install.disableWait or spec.upgrade.disableWait says
//     to wait for hooks only (internal/action/wait.go, getWaitStrategy); the
//     timeout is spec.timeout, default 5m (api/v2/helmrelease_types.go).
//     helm-controller waits with fluxcd/pkg/ssa's poller (every 5s, failing
//     as soon as an object is Failed); the driver with Helm's kstatus
//     watcher: the same readiness rules, other timing, and its timeout
//     written as helm-controller writes it (waitError);
//   - with spec.test.enable, Helm's tests run after every install and
//     upgrade (internal/reconcile/test.go);
//   - remediation (internal/reconcile/atomic_release.go): a failed install is
//     uninstalled, a failed upgrade rolled back, each then requeued, until
//     spec.{install,upgrade}.remediation.retries is exhausted; then Stalled
//     (RetriesExceeded), the last failed install left in place; one action of
//     each kind per reconcile;
//   - the conditions Released, TestSuccess, Remediated, Drifted, Reconciling
//     and Stalled with helm-controller's reasons and messages, and Ready
//     summarized from them (status.go cites the lines); status.history
//     (api/v2 Snapshots, truncated as its Truncate does), the failure
//     counters, lastAttemptedRevision and its digest;
//   - status.observedGeneration set only once the HelmRelease is Ready or
//     Stalled (a new one starts at the CRD's -1), so a parent that waits on
//     a child sees it in progress until a worker has finished it;
//   - a HelmRelease whose source is not ready is looked at again after
//     --requeue-dependency (30s) and whenever its source changes
//     (internal/controller/helmrelease_controller.go);
//   - spec.dependsOn: each dependency must exist, be Ready and have
//     observed its generation before the source is looked at; until then
//     Ready False, reason DependencyNotReady, looked at again after
//     --requeue-dependency, not when a dependency changes (depends.go cites
//     the lines; the trace "depends" holds what helm-controller v1.6.3 wrote
//     for a dependency that is not there, and what it did once released);
//   - the chart is the artifact source-controller serves for spec.chartRef
//     (an OCIRepository), checked against the artifact's digest;
//   - the Helm release [<targetNamespace>-]<name>, shortened to 53 characters
//     (chain.HelmReleaseName), in targetNamespace or the HelmRelease's
//     namespace, stored in storageNamespace or the HelmRelease's namespace;
//   - values: spec.valuesFrom in order, then spec.values merged over them;
//   - install.createNamespace (only with a targetNamespace);
//   - an upgrade only when the chart's name or version or the values changed;
//   - the finalizer: a deleted HelmRelease's Helm release is uninstalled.
//
// Not reproduced: drift detection (the driver writes Drifted False, as
// helm-controller does where nothing drifted: the tests change no object
// behind Helm's back), dependsOn's readyExpr (CEL expressions), suspend, the retry strategy, interval
// requeues (tests settle instead, see Settle), valuesFrom targetPath, and the
// digests of status.history's release objects and values (the driver's
// own). helm-controller takes ownership of objects another Helm release
// owns; this driver does not, so two levels naming one object fail the test
// instead of fighting over it.
package helmdriver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

var (
	helmReleaseGVR   = helmv2.GroupVersion.WithResource("helmreleases")
	ociRepositoryGVR = sourcev1.GroupVersion.WithResource("ocirepositories")
)

// Options are helm-controller's flags and defaults that the driver follows.
type Options struct {
	// Workers is --concurrent (main.go: default 4).
	Workers int
	// Timeout is spec.timeout's default (5m), for HelmReleases that set none.
	// Tests may shorten it to see a timeout within their own.
	Timeout time.Duration
	// RequeueDependency is --requeue-dependency (main.go: default 30s).
	RequeueDependency time.Duration
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.RequeueDependency <= 0 {
		o.RequeueDependency = 30 * time.Second
	}
	return o
}

// Event is one Helm action the driver took.
type Event struct {
	// Action is install, upgrade, uninstall or rollback; a failed one is
	// "install failed" or "upgrade failed".
	Action string
	// HelmRelease is <namespace>/<name> of the HelmRelease.
	HelmRelease string
	// Release is <namespace>/<name> of the Helm release.
	Release  string
	Revision int
	// Took is how long the action held its worker.
	Took time.Duration
}

func (e Event) String() string {
	return fmt.Sprintf("%s %s (revision %d, %s) for HelmRelease %s", e.Action, e.Release, e.Revision, e.Took.Round(time.Millisecond), e.HelmRelease)
}

// Driver reconciles HelmReleases with the Helm SDK.
type Driver struct {
	kubeconfig string
	opts       Options
	dyn        dynamic.Interface
	client     kubernetes.Interface
	http       *http.Client
	queue      workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	events  []Event
	busy    int
	latest  map[string]string // key -> fingerprint the watch saw last
	done    map[string]string // key -> fingerprint a worker finished with
	stalled map[string]string // key -> Stalled message
	lastErr map[string]string // key -> last error of a reconcile, or why it waits
}

// New returns a driver for the API server of the kubeconfig file.
func New(kubeconfig string, opts Options) (*Driver, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// helm-controller's finalizer has no path: the API server warns on each
	// update.
	cfg.WarningHandler = rest.NoWarnings{}
	// Flux's controllers talk to the API server at 50 requests/s, bursts of
	// 300 (fluxcd/pkg/runtime/client: --kube-api-qps, --kube-api-burst).
	cfg.QPS, cfg.Burst = 50, 300
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Driver{
		kubeconfig: kubeconfig, opts: opts.withDefaults(), dyn: dyn, client: client,
		http:    &http.Client{Timeout: 30 * time.Second},
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		latest:  map[string]string{},
		done:    map[string]string{},
		stalled: map[string]string{},
		lastErr: map[string]string{},
	}, nil
}

// Start runs the watch and the workers until ctx ends.
func (d *Driver) Start(ctx context.Context) {
	go func() {
		<-ctx.Done()
		d.queue.ShutDown()
	}()
	go d.watch(ctx)
	for range d.opts.Workers {
		go d.work(ctx)
	}
}

// watch stands in for the informers: every 200ms it lists HelmReleases and
// OCIRepositories and enqueues each HelmRelease whose spec, deletion or
// source artifact changed.
func (d *Driver) watch(ctx context.Context) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if fps, err := d.fingerprints(ctx); err == nil {
			d.mu.Lock()
			for key, fp := range fps {
				if d.latest[key] != fp {
					d.queue.Add(key)
				}
			}
			d.latest = fps
			d.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// fingerprints returns, per HelmRelease key, what a change of triggers a
// reconcile: its generation, its deletion and its source's artifact.
func (d *Driver) fingerprints(ctx context.Context) (map[string]string, error) {
	hrs, err := d.dyn.Resource(helmReleaseGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	repos, err := d.dyn.Resource(ociRepositoryGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	artifacts := map[string]string{}
	for _, r := range repos.Items {
		artifacts[r.GetNamespace()+"/"+r.GetName()] = artifactOf(&r)
	}
	out := map[string]string{}
	for _, hr := range hrs.Items {
		out[hr.GetNamespace()+"/"+hr.GetName()] = fingerprint(&hr, artifacts[sourceKey(&hr)])
	}
	return out, nil
}

func fingerprint(hr *unstructured.Unstructured, artifact string) string {
	return fmt.Sprintf("%d/%t/%s", hr.GetGeneration(), hr.GetDeletionTimestamp() != nil, artifact)
}

// sourceKey is <namespace>/<name> of the HelmRelease's chartRef.
func sourceKey(hr *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(hr.Object, "spec", "chartRef", "name")
	ns, _, _ := unstructured.NestedString(hr.Object, "spec", "chartRef", "namespace")
	if ns == "" {
		ns = hr.GetNamespace()
	}
	return ns + "/" + name
}

// artifactOf is the source's artifact digest and readiness, as a string.
func artifactOf(repo *unstructured.Unstructured) string {
	digest, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "digest")
	ready, _ := readiness(repo)
	return fmt.Sprintf("%s/%t", digest, ready)
}

// work is one worker: it takes a key, reconciles it and requeues it as
// controller-runtime does with the result.
func (d *Driver) work(ctx context.Context) {
	for {
		key, shutdown := d.queue.Get()
		if shutdown {
			return
		}
		d.mu.Lock()
		d.busy++
		d.mu.Unlock()
		res, err := d.reconcileKey(ctx, key)
		d.mu.Lock()
		d.busy--
		switch {
		case err != nil:
			d.lastErr[key] = err.Error()
		case res.waiting != "":
			d.lastErr[key] = "waiting: " + res.waiting
		case res.fingerprint != "":
			d.done[key] = res.fingerprint
			delete(d.lastErr, key)
		}
		d.mu.Unlock()
		switch {
		case err != nil || res.requeue:
			d.queue.AddRateLimited(key)
		case res.requeueAfter > 0:
			d.queue.Forget(key)
			d.queue.AddAfter(key, res.requeueAfter)
		default:
			d.queue.Forget(key)
		}
		d.queue.Done(key)
	}
}

// record notes an event.
func (d *Driver) record(ev Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, ev)
}

// Settle waits until every HelmRelease has been reconciled since its last
// change and no worker is busy, and returns the events since the last Settle.
// It fails when a HelmRelease stalled (retries exhausted) or timeout passed.
func (d *Driver) Settle(ctx context.Context, timeout time.Duration) ([]Event, error) {
	deadline := time.Now().Add(timeout)
	quiet := 0
	for {
		d.mu.Lock()
		settled := d.busy == 0 && d.queue.Len() == 0 && len(d.latest) > 0
		var pending []string
		for key, fp := range d.latest {
			if d.done[key] != fp {
				settled = false
				pending = append(pending, key+d.why(key))
			}
		}
		var stalled []string
		for key, msg := range d.stalled {
			if _, ok := d.latest[key]; ok {
				stalled = append(stalled, key+": "+msg)
			}
		}
		events := d.events
		d.mu.Unlock()
		if settled {
			quiet++
		} else {
			quiet = 0
		}
		if len(stalled) > 0 || quiet >= 5 || time.Now().After(deadline) || ctx.Err() != nil {
			d.mu.Lock()
			d.events = d.events[len(events):]
			d.mu.Unlock()
			slices.Sort(pending)
			slices.Sort(stalled)
			switch {
			case len(stalled) > 0:
				return events, fmt.Errorf("stalled: %s", strings.Join(stalled, "; "))
			case quiet >= 5:
				return events, nil
			default:
				return events, fmt.Errorf("not settled within %s; not done: %s", timeout, strings.Join(pending, ", "))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// why is " (last error)" of a key, or "". The caller holds mu.
func (d *Driver) why(key string) string {
	if e := d.lastErr[key]; e != "" {
		return " (" + e + ")"
	}
	return ""
}
