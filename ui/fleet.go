package ui

import (
	"context"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/solar-pipeline/solar/renderer/load"
)

// fleetView is what the pages show of the device fleet: every Device of the
// SolAr API server with what the fleet's bucket holds of its device id
// (fleet.Status, read by fleetkv's StatusWatch as solar fleet status
// --watch reads it), kept current by one watch of the Devices and one of
// the bucket, the UI's own however many browsers are open; and the
// DeviceUpgrades, whose rollouts (deviceupgrade-NAME) have no Rollout
// object and are listed with the Rollouts (model.more).
type fleetView struct {
	nats  *fleetkv.NATS // nil: no Devices, no bucket
	model *model
	log   *slog.Logger
	// retry is how long a failed watch of the bucket waits before it
	// starts again, as the controller's does; syncWait how long start
	// waits for the caches.
	retry, syncWait time.Duration

	informers dynamicinformer.DynamicSharedInformerFactory
	upgrades  cache.GenericLister
	devices   cache.Indexer // nil without nats
	synced    atomic.Bool   // the Devices' cache is filled: their events are changes
	// pub orders what is told: a row computed before a change is sent
	// before the row computed after it.
	pub     sync.Mutex
	mu      sync.RWMutex
	status  map[string]fleet.Status // by device id
	problem string                  // why the bucket cannot be read now
}

// byDeviceID indexes the cached Devices by spec.deviceId: a change in the
// bucket names a device id, not a Device (two namespaces may name one).
const byDeviceID = "deviceId"

func newFleetView(dyn dynamic.Interface, n *fleetkv.NATS, m *model, log *slog.Logger) *fleetView {
	f := &fleetView{nats: n, model: m, log: log, retry: 10 * time.Second, syncWait: 30 * time.Second, status: map[string]fleet.Status{},
		informers: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)}
	f.upgrades = f.informers.ForResource(kube.GVR(api.KindDeviceUpgrade)).Lister()
	m.more = f.rollouts
	if n == nil {
		return f
	}
	inf := f.informers.ForResource(kube.GVR(api.KindDevice)).Informer()
	_ = inf.AddIndexers(cache.Indexers{byDeviceID: func(o any) ([]string, error) {
		return []string{deviceID(o.(*unstructured.Unstructured))}, nil
	}})
	changed := func(deleted bool) func(o any) {
		return func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if u, ok := o.(*unstructured.Unstructured); ok && f.synced.Load() { // not the cache's filling
				f.publish(u.GetNamespace(), []*unstructured.Unstructured{u}, deleted)
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: changed(false),
		UpdateFunc: func(_, o any) { changed(false)(o) }, DeleteFunc: changed(true)})
	f.devices = inf.GetIndexer()
	return f
}

// start fills the caches of the DeviceUpgrades and, with NATS, the Devices,
// and starts the bucket's watch, which runs until ctx ends. It waits for
// the caches at most syncWait: an account that may not list them (its
// RBAC of an older config/ui/rbac.yaml) costs the fleet's parts, not the
// Targets' pages.
func (f *fleetView) start(ctx context.Context) {
	f.informers.Start(ctx.Done())
	wait, cancel := context.WithTimeout(ctx, f.syncWait)
	defer cancel()
	if !allSynced(f.informers.WaitForCacheSync(wait.Done())) && ctx.Err() == nil {
		f.log.Warn("the UI's account cannot list Devices or DeviceUpgrades yet (apply config/ui/rbac.yaml): "+
			"no fleet and no device rollout until it can", "after", f.syncWait)
		go func() {
			f.informers.WaitForCacheSync(ctx.Done())
			f.synced.Store(true)
		}()
	} else {
		f.synced.Store(true)
	}
	if f.nats != nil {
		go f.watch(ctx)
	}
}

func allSynced[K comparable](m map[K]bool) bool {
	for _, ok := range m {
		if !ok {
			return false
		}
	}
	return true
}

// deviceID is a Device's spec.deviceId.
func deviceID(u *unstructured.Unstructured) string {
	id, _, _ := unstructured.NestedString(u.Object, "spec", "deviceId")
	return id
}

// rollouts are the DeviceUpgrades' rollouts: those with spec.rollout.
func (f *fleetView) rollouts() []load.ID {
	objs, _ := f.upgrades.List(labels.Everything())
	var ids []load.ID
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		if _, ok, _ := unstructured.NestedMap(u.Object, "spec", "rollout"); ok {
			ids = append(ids, load.ID{Namespace: u.GetNamespace(), Name: api.DeviceRolloutPrefix + u.GetName()})
		}
	}
	return ids
}

// watch follows the bucket until ctx ends; a watch that fails (NATS down
// for longer than the watch's outage, the bucket missing or deleted) is
// said on the fleet pages and starts again after retry, its listing
// telling the browsers what changed meanwhile.
func (f *fleetView) watch(ctx context.Context) {
	for ctx.Err() == nil {
		err := f.watchOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		f.log.Warn("watching the fleet's bucket: starting again", "after", f.retry, "error", err)
		f.mu.Lock()
		f.problem = "the fleet's bucket cannot be read now (the states shown are the last known): " + err.Error()
		f.mu.Unlock()
		select {
		case <-time.After(f.retry):
		case <-ctx.Done():
		}
	}
}

// watchOnce lists and watches the bucket as solar fleet status --watch
// does (pipeline.WatchFleetStatus, whose line the UI does not link) until
// the watch fails or ctx ends.
func (f *fleetView) watchOnce(ctx context.Context) error {
	n := *f.nats
	n.Mode = fleetkv.MustExist // the UI creates nothing
	bucket, done, err := fleetkv.Connect(ctx, n)
	if err != nil {
		return err
	}
	defer done()
	w, st, err := bucket.WatchStatus(ctx, fleetkv.WatchOptions{})
	if err != nil {
		return err
	}
	defer w.Stop()
	f.listed(st)
	for {
		s, err := w.Next(ctx)
		if err != nil {
			return err
		}
		f.changed(s)
	}
}

// listed takes the bucket's listing in place of what was known, and tells
// the browsers of the devices that changed.
func (f *fleetView) listed(st []fleet.Status) {
	now := map[string]fleet.Status{}
	for _, s := range st {
		now[s.DeviceID] = s
	}
	f.mu.Lock()
	old := f.status
	f.status, f.problem = now, ""
	f.mu.Unlock()
	var ids []string
	for id := range maps.Keys(old) {
		if _, ok := now[id]; !ok {
			ids = append(ids, id)
		}
	}
	for id, s := range now {
		if o, ok := old[id]; !ok || !reflect.DeepEqual(o, s) {
			ids = append(ids, id)
		}
	}
	f.publishIDs(ids)
}

// changed keeps a device's new status and tells the browsers.
func (f *fleetView) changed(s fleet.Status) {
	f.mu.Lock()
	if s.Known() {
		f.status[s.DeviceID] = s
	} else {
		delete(f.status, s.DeviceID)
	}
	f.mu.Unlock()
	f.publishIDs([]string{s.DeviceID})
}

// publishIDs tells the browsers of the Devices with these device ids,
// namespace by namespace.
func (f *fleetView) publishIDs(ids []string) {
	if f.devices == nil || len(ids) == 0 {
		return
	}
	byNS := map[string][]*unstructured.Unstructured{}
	for _, id := range ids {
		objs, _ := f.devices.ByIndex(byDeviceID, id)
		for _, o := range objs {
			u := o.(*unstructured.Unstructured)
			byNS[u.GetNamespace()] = append(byNS[u.GetNamespace()], u)
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(byNS)) {
		f.publish(ns, byNS[ns], false)
	}
}

// publish tells the browsers of some Devices of ns: each one's row (gone,
// when deleted) with ns's counts by state, computed once.
func (f *fleetView) publish(ns string, devices []*unstructured.Unstructured, deleted bool) {
	f.pub.Lock()
	defer f.pub.Unlock()
	counts := f.counts(ns)
	for _, u := range devices {
		f.model.publish(change{Device: &deviceChange{Device: f.row(u), Counts: counts, Deleted: deleted}})
	}
}

// list is ns's Devices, by name.
func (f *fleetView) list(ns string) []*unstructured.Unstructured {
	if f.devices == nil {
		return nil
	}
	objs, _ := f.devices.ByIndex(cache.NamespaceIndex, ns)
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*unstructured.Unstructured))
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// namespaces are those that have Devices, sorted.
func (f *fleetView) namespaces() []string {
	if f.devices == nil {
		return nil
	}
	return slices.Sorted(slices.Values(f.devices.ListIndexFuncValues(cache.NamespaceIndex)))
}

// lookup is what the bucket holds of a device id (no attempt, no state
// when nothing), and why the bucket cannot be read now.
func (f *fleetView) lookup(id string) (fleet.Status, string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, ok := f.status[id]
	if !ok {
		s = fleet.Status{DeviceID: id}
	}
	return s, f.problem
}

// counts are ns's Devices by state, by state's name.
func (f *fleetView) counts(ns string) []count {
	n := map[string]int{}
	for _, u := range f.list(ns) {
		s, _ := f.lookup(deviceID(u))
		n[stateOf(s)]++
	}
	var out []count
	for _, st := range slices.Sorted(maps.Keys(n)) {
		out = append(out, count{st, n[st]})
	}
	return out
}
