package helmdriver

import (
	"encoding/json"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/opencontainers/go-digest"
	"helm.sh/helm/v4/pkg/release"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// observer is Helm's storage driver with helm-controller's observer around
// it (internal/storage/observer.go): every release an action creates,
// updates or deletes is handed to fn, which keeps status.history as
// helm-controller keeps it.
type observer struct {
	driver.Driver
	fn func(*releasev1.Release)
}

func (o *observer) Create(key string, rls release.Releaser) error {
	if err := o.Driver.Create(key, rls); err != nil {
		return err
	}
	o.call(rls)
	return nil
}

func (o *observer) Update(key string, rls release.Releaser) error {
	if err := o.Driver.Update(key, rls); err != nil {
		return err
	}
	o.call(rls)
	return nil
}

func (o *observer) Delete(key string) (release.Releaser, error) {
	rls, err := o.Driver.Delete(key)
	if err == nil {
		o.call(rls)
	}
	return rls, err
}

func (o *observer) call(rls release.Releaser) {
	if rel, ok := rls.(*releasev1.Release); ok && o.fn != nil {
		o.fn(rel)
	}
}

// observing runs do with every release it writes handed to fn.
func (r *request) observing(fn func(*releasev1.Release), do func()) {
	r.obs.fn = fn
	defer func() { r.obs.fn = nil }()
	do()
}

// collect gathers the releases an install or upgrade writes, the newest
// write of each version (observeRelease of internal/reconcile/release.go).
func collect(into map[int]*releasev1.Release) func(*releasev1.Release) {
	return func(rel *releasev1.Release) { into[rel.Version] = rel }
}

// record puts the releases an install or upgrade wrote into the history
// (recordOnObject of internal/reconcile/release.go, lines 75-111): the
// newest a new snapshot in front, marked with the action and the chart
// artifact's digest; an older one, when there is, replaces its snapshot,
// keeping that one's artifact digest and test hooks.
func (r *request) record(observed map[int]*releasev1.Release, action helmv2.ReleaseAction) {
	newest := -1
	for v := range observed {
		newest = max(newest, v)
	}
	if newest < 0 {
		return
	}
	r.status.History = append(helmv2.Snapshots{snapshotOf(observed[newest], action, r.ociDigest)}, r.status.History...)
	for v, rel := range observed {
		if v == newest {
			continue
		}
		for i, snap := range r.status.History {
			if snap.Targets(rel.Name, rel.Namespace, rel.Version) {
				next := snapshotOf(rel, "", snap.OCIDigest)
				next.SetTestHooks(snap.GetTestHooks())
				r.status.History[i] = next
				break
			}
		}
	}
}

// replaceIn is the observer of a rollback (observeRollback of
// rollback_remediation.go) or an uninstall (observeUninstall of
// uninstall.go): a release written whose snapshot is in the history
// replaces it, marked with the action; during a rollback, one that is not
// goes in front, unmarked.
func (r *request) replaceIn(action helmv2.ReleaseAction, addNew bool) func(*releasev1.Release) {
	return func(rel *releasev1.Release) {
		for i, snap := range r.status.History {
			if snap.Targets(rel.Name, rel.Namespace, rel.Version) {
				next := snapshotOf(rel, action, snap.OCIDigest)
				next.SetTestHooks(snap.GetTestHooks())
				r.status.History[i] = next
				return
			}
		}
		if addNew {
			r.status.History = append(helmv2.Snapshots{snapshotOf(rel, "", "")}, r.status.History...)
		}
	}
}

// tested is the observer of a test run (observeTest of test.go): the newest
// snapshot gets the test hooks' results.
func (r *request) tested(rel *releasev1.Release) {
	latest := r.status.History.Latest()
	if !latest.Targets(rel.Name, rel.Namespace, rel.Version) {
		return
	}
	next := snapshotOf(rel, latest.GetAction(), latest.OCIDigest)
	hooks := map[string]*helmv2.TestHookStatus{}
	for _, h := range rel.Hooks {
		for _, e := range h.Events {
			if e == releasev1.HookTest {
				hooks[h.Name] = &helmv2.TestHookStatus{
					LastStarted: metav1.NewTime(h.LastRun.StartedAt), LastCompleted: metav1.NewTime(h.LastRun.CompletedAt),
					Phase: string(h.LastRun.Phase),
				}
			}
		}
	}
	next.SetTestHooks(hooks)
	r.status.History[0] = next
}

// snapshotOf is a Helm release as status.history holds it
// (ObservedToSnapshot of internal/release/observation.go); the digests of
// the release object and its values are the driver's own (of the release's
// name, version and status, and of its values), in the same sha256 form.
func snapshotOf(rel *releasev1.Release, action helmv2.ReleaseAction, ociDigest string) *helmv2.Snapshot {
	config, _ := json.Marshal(rel.Config)
	s := &helmv2.Snapshot{
		APIVersion: helmv2.CurrentSnapshotAPIVersion, Name: rel.Name, Namespace: rel.Namespace, Version: rel.Version,
		ConfigDigest: digest.FromBytes(config).String(),
		Action:       action, OCIDigest: ociDigest,
	}
	if rel.Info != nil {
		s.Status = rel.Info.Status.String()
		s.FirstDeployed = metav1.NewTime(rel.Info.FirstDeployed.UTC().Truncate(time.Second))
		s.LastDeployed = metav1.NewTime(rel.Info.LastDeployed.UTC().Truncate(time.Second))
		s.Deleted = metav1.NewTime(rel.Info.Deleted.UTC().Truncate(time.Second))
	}
	s.Digest = digest.FromString(fmt.Sprintf("%s.v%d/%s", rel.Name, rel.Version, s.Status)).String()
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		s.ChartName, s.ChartVersion, s.AppVersion = rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Chart.Metadata.AppVersion
	}
	return s
}
