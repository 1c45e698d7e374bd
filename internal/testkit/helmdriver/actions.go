package helmdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// waitStrategy is getWaitStrategy of internal/action/wait.go for the
// default spec.waitStrategy: kstatus unless the action disables waiting.
func waitStrategy(disableWait bool) kube.WaitStrategy {
	if disableWait {
		return kube.HookOnlyStrategy
	}
	return kube.StatusWatcherStrategy
}

// install is newInstall of internal/action/install.go: server-side apply
// with forced conflicts, the wait strategy, the timeout; CreateNamespace only
// with a targetNamespace.
func (d *Driver) install(ctx context.Context, req *request) (*releasev1.Release, error) {
	in := action.NewInstall(req.cfg)
	in.ReleaseName, in.Namespace = req.name, req.ns
	in.ServerSideApply, in.ForceConflicts = true, true
	in.WaitStrategy = waitStrategy(req.spec.Install.DisableWait)
	in.WaitForJobs = true
	in.Timeout = req.timeout
	in.CreateNamespace = req.spec.TargetNamespace != "" && req.spec.Install.CreateNamespace
	rel, err := in.RunWithContext(ctx, req.chart, req.values)
	if err != nil {
		return nil, waitError(err)
	}
	return asRelease(rel)
}

// upgrade is newUpgrade of internal/action/upgrade.go: the values are reset
// to the chart's (no preserveValues), history kept to 5 (spec.maxHistory's
// default).
func (d *Driver) upgrade(ctx context.Context, req *request) (*releasev1.Release, error) {
	up := action.NewUpgrade(req.cfg)
	up.Namespace = req.ns
	up.ServerSideApply, up.ForceConflicts = "true", true
	up.WaitStrategy = waitStrategy(req.spec.Upgrade.DisableWait)
	up.WaitForJobs = true
	up.Timeout = req.timeout
	up.ResetValues, up.MaxHistory = true, 5
	rel, err := up.RunWithContext(ctx, req.name, req.chart, req.values)
	if err != nil {
		return nil, waitError(err)
	}
	return asRelease(rel)
}

// uninstall removes the release and waits until its objects are gone
// (spec.uninstall.disableWait is false by default).
func (d *Driver) uninstall(req *request) error {
	un := action.NewUninstall(req.cfg)
	un.WaitStrategy, un.Timeout = kube.StatusWatcherStrategy, req.timeout
	if _, err := un.Run(req.name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return fmt.Errorf("uninstalling %s: %w", req.name, err)
	}
	return nil
}

func asRelease(r any) (*releasev1.Release, error) {
	rel, ok := r.(*releasev1.Release)
	if !ok {
		return nil, fmt.Errorf("only chart API v2 releases are driven here, not %T", r)
	}
	return rel, nil
}

// finalize uninstalls a deleted HelmRelease's release and removes the
// finalizer.
func (d *Driver) finalize(ctx context.Context, req *request) (result, error) {
	hr := req.hr
	if !slices.Contains(hr.GetFinalizers(), helmv2.HelmReleaseFinalizer) {
		return result{}, nil
	}
	last, err := req.cfg.Releases.Last(req.name)
	if err == nil {
		if err := d.uninstall(req); err != nil {
			return result{}, err
		}
		ev := Event{Action: "uninstall", HelmRelease: req.key, Release: req.ns + "/" + req.name}
		if rel, ok := last.(*releasev1.Release); ok {
			ev.Revision = rel.Version
		}
		d.record(ev)
	} else if !errors.Is(err, driver.ErrReleaseNotFound) {
		return result{}, err
	}
	hr.SetFinalizers(slices.DeleteFunc(hr.GetFinalizers(), func(f string) bool { return f == helmv2.HelmReleaseFinalizer }))
	if _, err := d.dyn.Resource(helmReleaseGVR).Namespace(hr.GetNamespace()).Update(ctx, hr, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return result{}, fmt.Errorf("removing the finalizer: %w", err)
	}
	return result{}, nil
}

// config is a Helm action configuration for releases in releaseNS stored in
// storageNS.
func (d *Driver) config(releaseNS, storageNS string) (*action.Configuration, error) {
	getter := genericclioptions.NewConfigFlags(false)
	getter.KubeConfig, getter.Namespace = &d.kubeconfig, &releaseNS
	// Helm's own log would outlive the test's API server (an action in flight
	// at cleanup); what an action did is in the events and in the
	// HelmRelease's status.
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	if err := cfg.Init(getter, storageNS, "secret"); err != nil {
		return nil, fmt.Errorf("helm configuration: %w", err)
	}
	return cfg, nil
}

// unchanged: the same chart name and version and the same values, as
// helm-controller decides that no upgrade is needed.
func unchanged(last, next *chart.Chart, lastValues, nextValues map[string]any) bool {
	if last.Metadata.Name != next.Metadata.Name || last.Metadata.Version != next.Metadata.Version {
		return false
	}
	if len(lastValues) == 0 && len(nextValues) == 0 {
		return true // Helm stores no values as null
	}
	a, errA := json.Marshal(lastValues)
	b, errB := json.Marshal(nextValues)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// notReady is how Helm's kstatus watcher names an object that did not
// become ready (pkg/kube/statuswait.go: "resource KIND/NAMESPACE/NAME not
// ready. status: STATUS, message: ...").
var notReady = regexp.MustCompile(`(?m)^resource ([^/\s]+/[^/\s]*/[^/\s]+) not ready\. status: (\w+), message: .*$`)

// waitError writes a failed readiness wait as helm-controller's waiter does
// (fluxcd/pkg/ssa v0.76.1, manager_wait.go, WaitForSetWithContext, lines
// 160-200: "timeout waiting for: [KIND/NAMESPACE/NAME status: 'STATUS', ...]"
// at the deadline, else "failed early due to stalled resources: [...]");
// any other error is Helm's, as helm-controller writes it.
func waitError(err error) error {
	found := notReady.FindAllStringSubmatch(err.Error(), -1)
	if len(found) == 0 {
		return err
	}
	var objs []string
	for _, m := range found {
		objs = append(objs, fmt.Sprintf("%s status: '%s'", m[1], m[2]))
	}
	msg := "failed early due to stalled resources"
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
		msg = "timeout waiting for"
	}
	return fmt.Errorf("%s: [%s]", msg, strings.Join(objs, ", "))
}
