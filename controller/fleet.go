package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// FleetOptions make the controller the fleet's pass too: it watches Devices
// and DeviceUpgrades, and the devices' states in the bucket, and runs solar
// fleet apply of a namespace's DeviceUpgrades when any of them changes.
type FleetOptions struct {
	// NATS is the fleet's bucket (created when missing, as fleet apply
	// does).
	NATS fleetkv.NATS
	// Concurrency is how many devices are applied at once (default 8).
	Concurrency int
	// WatchRetry is how long the bucket's watch waits before it starts
	// again after it failed (default 10s): the bucket missing until the
	// first pass creates it, NATS down for longer than the watch's outage.
	WatchRetry time.Duration
}

// deviceIDField indexes the cached Devices by spec.deviceId: a state
// change in the bucket names a device id, not a Device.
const deviceIDField = "spec.deviceId"

// fleetReconciler applies one namespace's DeviceUpgrades per request: the
// request's Name is the namespace.
type fleetReconciler struct {
	*reconciler
	store *pipeline.Store
	fleet FleetOptions
}

// setupFleet adds the fleet's controller to mgr: Device and DeviceUpgrade
// changes enqueue their namespace; a device's state change in the bucket
// enqueues the namespaces of the Devices with its id.
func setupFleet(ctx context.Context, mgr ctrl.Manager, r *fleetReconciler) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, newObject(api.KindDevice), deviceIDField, func(o client.Object) []string {
		id, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "spec", "deviceId")
		return []string{id}
	}); err != nil {
		return err
	}
	states := make(chan event.GenericEvent, 64)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { r.watchStates(ctx, states); return nil })); err != nil {
		return err
	}
	own := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetNamespace()}}}
	})
	changed := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).Named("solar-fleet").
		WithOptions(r.controllerOptions()).
		Watches(newObject(api.KindDevice), own, builder.WithPredicates(changed)).
		Watches(newObject(api.KindDeviceUpgrade), own, builder.WithPredicates(changed)).
		WatchesRawSource(source.Channel(states, own)).
		Watches(&corev1.Namespace{}, joined(), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}

// watchStates follows the devices' states in the bucket until ctx ends,
// and sends each changed device's Devices to states; a watch that fails
// starts again after WatchRetry.
func (r *fleetReconciler) watchStates(ctx context.Context, states chan<- event.GenericEvent) {
	for ctx.Err() == nil {
		err := pipeline.WatchFleetStatus(ctx, r.fleet.NATS, nil, func([]fleet.Status) error { return nil }, func(s fleet.Status) error {
			devices := &unstructured.UnstructuredList{}
			devices.SetGroupVersionKind(newObject(api.KindDevice + "List").GroupVersionKind())
			if err := r.client.List(ctx, devices, client.MatchingFields{deviceIDField: s.DeviceID}); err != nil {
				return err
			}
			for i := range devices.Items {
				select {
				case states <- event.GenericEvent{Object: &devices.Items[i]}:
				case <-ctx.Done():
				}
			}
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("watching the fleet's states: starting again", "after", r.fleet.WatchRetry, "error", err)
		select {
		case <-time.After(r.fleet.WatchRetry):
		case <-ctx.Done():
		}
	}
}

// Reconcile applies the namespace's DeviceUpgrades as solar fleet apply -n
// NS would: a rollout's next wave starts as soon as the states allow. It
// runs again after RolloutPoll while a DeviceUpgrade has a rollout (a
// deadline, a pause ending, a window opening), else after Interval.
func (r *fleetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := req.Name
	if mine, err := r.inShard(ctx, ns); err != nil || !mine {
		return ctrl.Result{}, err
	}
	objs, problems, rollouts, err := r.fleetInput(ctx, ns)
	if err != nil || objs == nil {
		return ctrl.Result{}, err
	}
	opts := r.opts.Pipeline
	opts.Objects, opts.Namespace, opts.Log = objs, ns, r.log
	run, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.RunTimeout)
	defer cancel()
	start := time.Now()
	results, more, err := pipeline.ApplyFleet(run, opts, pipeline.FleetOptions{Store: r.store, NATS: r.fleet.NATS, Concurrency: r.fleet.Concurrency})
	problems = append(problems, more...)
	if err == nil && problems.HasErrors() {
		// Stalled until an object changes (its watch runs it again).
		r.log.Error("the fleet's objects do not apply", "namespace", ns, "problems", errorsOf(problems))
		return ctrl.Result{}, nil
	}
	var failed []string
	for _, x := range results {
		if x.Error != "" {
			failed = append(failed, x.DeviceID+": "+x.Error)
		}
	}
	r.log.Info("fleet applied", "namespace", ns, "devices", len(results), "changed", pipeline.DeviceResults(results).Changed(),
		"failed", failed, "duration", time.Since(start).Round(time.Millisecond), "error", err)
	if err != nil {
		return ctrl.Result{}, err
	}
	if rollouts {
		return ctrl.Result{RequeueAfter: r.opts.RolloutPoll}, nil
	}
	return ctrl.Result{RequeueAfter: r.opts.Interval}, nil
}

// fleetInput are ns's Devices and DeviceUpgrades as the loader reads them
// (nil when ns has no DeviceUpgrade), and whether one has a rollout.
func (r *fleetReconciler) fleetInput(ctx context.Context, ns string) ([]*load.Object, diag.List, bool, error) {
	upgrades, err := list(ctx, r.client, api.KindDeviceUpgrade, ns)
	if err != nil || len(upgrades) == 0 {
		return nil, nil, false, err
	}
	devices, err := list(ctx, r.client, api.KindDevice, ns)
	if err != nil {
		return nil, nil, false, err
	}
	rollouts := false
	for _, u := range upgrades {
		if _, ok, _ := unstructured.NestedMap(u.Object, "spec", "rollout"); ok {
			rollouts = true
		}
	}
	objs, problems, err := loadObjects(append(devices, upgrades...))
	return objs, problems, rollouts, err
}
