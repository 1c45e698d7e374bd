package ui

import (
	"context"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/solar-pipeline/solar/renderer/store"
)

// model is what the pages show: every Target's status (status.Of, as solar
// status computes it) and every Rollout's state, kept current by one watch
// of the Targets, TargetReports and Rollouts (the UI's own, however many
// browsers are open) and by a refresh every interval (what is published to
// the store changes without an object changing; a Rollout's state, which
// only the store holds, is seen at the next refresh). Browsers read it:
// what they cost the API server is the RBAC questions, kept per user.
type model struct {
	dyn      dynamic.Interface
	store    store.Store
	interval time.Duration
	log      *slog.Logger

	reports cache.GenericLister
	// objects are the Rollout objects (their policy), set once run starts
	// (under mu).
	objects  cache.GenericLister
	mu       sync.RWMutex
	targets  map[load.ID]status.Target
	rollouts map[load.ID]*rolloutstore.Doc
	subs     map[chan change]struct{}
	dirty    chan load.ID
	// more are the rollouts that have no Rollout object: the
	// DeviceUpgrades' (fleetView.rollouts).
	more func() []load.ID
	// imported reads the reports imported from sites (nil: none).
	imported func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error)
}

// change is what a browser is told: a Target's new status, or a rollout's
// new state.
type change struct {
	Target  *status.Target    `json:"target,omitempty"`
	Rollout *rolloutstore.Doc `json:"rollout,omitempty"`
	Device  *deviceChange     `json:"device,omitempty"`
}

func newModel(dyn dynamic.Interface, st store.Store, interval time.Duration, log *slog.Logger,
	imported func(context.Context, string, string) (*unstructured.Unstructured, error)) *model {
	return &model{dyn: dyn, store: st, interval: interval, log: log, imported: imported, targets: map[load.ID]status.Target{},
		rollouts: map[load.ID]*rolloutstore.Doc{}, subs: map[chan change]struct{}{}, dirty: make(chan load.ID, 1024)}
}

// run watches until ctx ends; ready is closed once the caches are filled
// and every Target's status computed once.
func (m *model) run(ctx context.Context, ready chan<- struct{}) {
	f := dynamicinformer.NewDynamicSharedInformerFactory(m.dyn, 0)
	targets := f.ForResource(kube.GVR(api.KindTarget))
	reports := f.ForResource(kube.TargetReportGVR)
	rollouts := f.ForResource(kube.GVR(api.KindRollout))
	m.reports = reports.Lister()
	m.mu.Lock()
	m.objects = rollouts.Lister()
	m.mu.Unlock()
	mark := func(o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if u, ok := o.(*unstructured.Unstructured); ok {
			m.dirty <- load.ID{Namespace: u.GetNamespace(), Name: u.GetName()}
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: mark, UpdateFunc: func(_, o any) { mark(o) }, DeleteFunc: mark}
	for _, inf := range []cache.SharedIndexInformer{targets.Informer(), reports.Informer()} {
		_, _ = inf.AddEventHandler(h)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	m.refresh(ctx, targets.Lister(), rollouts.Lister())
	close(ready)
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-m.dirty:
			m.update(ctx, targets.Lister(), id)
		case <-tick.C:
			m.refresh(ctx, targets.Lister(), rollouts.Lister())
		}
	}
}

// rolloutObjects are the Rollout objects the watch holds (nil before it
// started).
func (m *model) rolloutObjects() cache.GenericLister {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.objects
}

// refresh computes every Target's status and reads every Rollout's state.
func (m *model) refresh(ctx context.Context, targets, rollouts cache.GenericLister) {
	objs, _ := targets.List(labels.Everything())
	seen := map[load.ID]bool{}
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		id := load.ID{Namespace: u.GetNamespace(), Name: u.GetName()}
		seen[id] = true
		m.update(ctx, targets, id)
	}
	m.mu.Lock()
	for id := range m.targets {
		if !seen[id] {
			delete(m.targets, id)
		}
	}
	m.mu.Unlock()
	objs, _ = rollouts.List(labels.Everything())
	var ids []load.ID
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		ids = append(ids, load.ID{Namespace: u.GetNamespace(), Name: u.GetName()})
	}
	if m.more != nil {
		ids = append(ids, m.more()...)
	}
	seen = map[load.ID]bool{}
	for _, id := range ids {
		seen[id] = true
		doc, err := rolloutstore.Read(ctx, m.store, id.Namespace, id.Name)
		if err != nil || doc == nil {
			continue
		}
		m.mu.Lock()
		old := m.rollouts[id]
		newer := old == nil || !doc.At.Before(old.At) // not what an action wrote since the read
		if newer {
			m.rollouts[id] = doc
		}
		m.mu.Unlock()
		if newer && !reflect.DeepEqual(old, doc) {
			m.publish(change{Rollout: doc})
		}
	}
	m.mu.Lock()
	for id := range m.rollouts {
		if !seen[id] { // the Rollout was deleted
			delete(m.rollouts, id)
		}
	}
	m.mu.Unlock()
}

// update computes the status of Target id again and tells the browsers
// when it changed.
func (m *model) update(ctx context.Context, targets cache.GenericLister, id load.ID) {
	if _, err := targets.ByNamespace(id.Namespace).Get(id.Name); apierrors.IsNotFound(err) {
		m.mu.Lock()
		delete(m.targets, id)
		m.mu.Unlock()
		return
	}
	st, err := status.Of(ctx, []load.ID{id}, m.store, status.Options{Report: m.report, Imported: m.imported})
	t := status.Target{Namespace: id.Namespace, Name: id.Name, State: status.Unknown, Releases: []status.Release{}}
	switch {
	case err != nil:
		// Shown as Unknown with why: the registry may answer next time.
		m.log.Warn("computing a Target's status", "namespace", id.Namespace, "name", id.Name, "error", err)
		t.Message = store.Explain(err).Error()
	case len(st) == 1:
		t = st[0]
	}
	t.Age = "" // the page shows the time, which does not change every second
	m.mu.Lock()
	old, had := m.targets[id]
	m.targets[id] = t
	m.mu.Unlock()
	if !had || !reflect.DeepEqual(old, t) {
		m.publish(change{Target: &t})
	}
}

// report reads a TargetReport from the watch's cache.
func (m *model) report(_ context.Context, ns, name string) (*unstructured.Unstructured, error) {
	o, err := m.reports.ByNamespace(ns).Get(name)
	if err != nil {
		return nil, err
	}
	return o.(*unstructured.Unstructured), nil
}

// publish hands c to every subscriber; one whose buffer is full (a page
// that does not read) is dropped and its channel closed: its stream ends,
// and the browser reconnects and loads what it missed.
func (m *model) publish(c change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ch := range m.subs {
		select {
		case ch <- c:
		default:
			delete(m.subs, ch)
			close(ch)
		}
	}
}

// subscribe returns a channel of changes until cancel.
func (m *model) subscribe() (<-chan change, func()) {
	ch := make(chan change, 256)
	m.mu.Lock()
	m.subs[ch] = struct{}{}
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		if _, ok := m.subs[ch]; ok { // not dropped by publish
			delete(m.subs, ch)
			close(ch)
		}
		m.mu.Unlock()
	}
}

// snapshot is every Target, by namespace and name, and every rollout: a
// copy, which the caller filters outside the lock (asking RBAC takes time).
func (m *model) snapshot() ([]status.Target, []*rolloutstore.Doc) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var ts []status.Target
	for _, id := range slices.SortedFunc(maps.Keys(m.targets), byID) {
		ts = append(ts, m.targets[id])
	}
	var rs []*rolloutstore.Doc
	for _, id := range slices.SortedFunc(maps.Keys(m.rollouts), byID) {
		rs = append(rs, m.rollouts[id])
	}
	return ts, rs
}

// target and rollout are one Target's status and one Rollout's state.
func (m *model) target(id load.ID) (status.Target, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, ok := m.targets[id]
	return t, ok
}

func (m *model) rollout(id load.ID) *rolloutstore.Doc {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.rollouts[id]
}

// setRollout keeps the state an action wrote, and tells the browsers.
func (m *model) setRollout(doc *rolloutstore.Doc) {
	m.mu.Lock()
	m.rollouts[load.ID{Namespace: doc.Namespace, Name: doc.Name}] = doc
	m.mu.Unlock()
	m.publish(change{Rollout: doc})
}

func byID(a, b load.ID) int {
	return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
}
