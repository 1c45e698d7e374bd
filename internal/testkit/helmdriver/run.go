package helmdriver

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// run runs one Helm action, records it, and writes into req.status what
// helm-controller writes of it (the sub-reconcilers of internal/reconcile:
// install.go, upgrade.go, test.go, uninstall_remediation.go,
// rollback_remediation.go; each ends with summarize).
func (d *Driver) run(ctx context.Context, req *request, next string) {
	start := time.Now()
	ev := Event{Action: next, HelmRelease: req.key, Release: req.ns + "/" + req.name}
	defer func() {
		ev.Took = time.Since(start)
		d.record(ev)
	}()
	defer req.summarize()
	switch next {
	case "install", "upgrade":
		rel, err := d.release(ctx, req, next)
		if rel != nil {
			ev.Revision = rel.Version
		}
		if err != nil {
			ev.Action = next + " failed"
		}
	case "test":
		d.test(req)
	case "uninstall":
		d.uninstallRemediation(req)
	case "rollback":
		d.rollback(req)
	}
}

// release runs an install or an upgrade (install.go, upgrade.go): a failure
// that stored a release counts against the action's retries.
func (d *Driver) release(ctx context.Context, req *request, next string) (*releasev1.Release, error) {
	act, failed, succeeded := helmv2.ReleaseActionInstall, helmv2.InstallFailedReason, helmv2.InstallSucceededReason
	fmtFailure, fmtSuccess := fmtInstallFailure, fmtInstallSuccess
	if next == "upgrade" {
		act, failed, succeeded = helmv2.ReleaseActionUpgrade, helmv2.UpgradeFailedReason, helmv2.UpgradeSucceededReason
		fmtFailure, fmtSuccess = fmtUpgradeFailure, fmtUpgradeSuccess
	}
	req.status.LastAttemptedReleaseAction = act
	if next == "install" {
		// An install resets the history: never roll back past it.
		req.status.ClearHistory()
	}
	req.unmark(helmv2.TestSuccessCondition, helmv2.RemediatedCondition)
	var rel *releasev1.Release
	var err error
	observed := map[int]*releasev1.Release{}
	req.observing(collect(observed), func() {
		if next == "install" {
			rel, err = d.install(ctx, req)
		} else {
			rel, err = d.upgrade(ctx, req)
		}
	})
	req.record(observed, act)
	if err != nil {
		req.status.Failures++
		req.mark(helmv2.ReleasedCondition, metav1.ConditionFalse, failed, fmtFailure, req.ns, req.name, req.chart.Name(), req.chart.Metadata.Version, strings.TrimSpace(err.Error()))
		switch {
		case len(observed) == 0:
		case next == "install":
			req.status.InstallFailures++
		default:
			req.status.UpgradeFailures++
		}
		return rel, err
	}
	cur := req.status.History.Latest()
	req.mark(helmv2.ReleasedCondition, metav1.ConditionTrue, succeeded, fmtSuccess, cur.FullReleaseName(), cur.VersionedChartName())
	if req.spec.Test.Enable && !cur.HasBeenTested() {
		req.mark(helmv2.TestSuccessCondition, metav1.ConditionUnknown, "AwaitingTests", fmtTestPending, cur.FullReleaseName(), cur.VersionedChartName())
	}
	return rel, nil
}

// test runs the chart's Helm tests (test.go): the test hooks' results go to
// the newest snapshot, TestSuccess says how they went.
func (d *Driver) test(req *request) {
	t := action.NewReleaseTesting(req.cfg)
	t.Namespace, t.Timeout = req.ns, req.timeout
	var err error
	req.observing(req.tested, func() {
		var shutdown action.ExecuteShutdownFunc
		_, shutdown, err = t.Run(req.name)
		if shutdown != nil {
			_ = shutdown()
		}
	})
	cur := req.status.History.Latest()
	if err != nil {
		req.mark(helmv2.TestSuccessCondition, metav1.ConditionFalse, helmv2.TestFailedReason, fmtTestFailure, cur.FullReleaseName(), cur.VersionedChartName(), strings.TrimSpace(err.Error()))
		return
	}
	msg := "no test hooks"
	if n := len(cur.GetTestHooks()); n == 1 {
		msg = "1 test hook completed successfully"
	} else if n > 1 {
		msg = fmt.Sprintf("%d test hooks completed successfully", n)
	}
	req.mark(helmv2.TestSuccessCondition, metav1.ConditionTrue, helmv2.TestSucceededReason, fmtTestSuccess, cur.FullReleaseName(), cur.VersionedChartName(), msg)
}

// uninstallRemediation uninstalls a failed install (uninstall_remediation.go).
func (d *Driver) uninstallRemediation(req *request) {
	cur := req.status.History.Latest().DeepCopy()
	var err error
	req.observing(req.replaceIn(helmv2.ReleaseActionUninstallRemediation, false), func() { err = d.uninstall(req) })
	if err != nil {
		req.mark(helmv2.RemediatedCondition, metav1.ConditionFalse, helmv2.UninstallFailedReason, fmtUninstallRemErr, cur.FullReleaseName(), cur.VersionedChartName(), strings.TrimSpace(err.Error()))
		return
	}
	req.mark(helmv2.RemediatedCondition, metav1.ConditionTrue, helmv2.UninstallSucceededReason, fmtUninstallRemOK, cur.FullReleaseName(), cur.VersionedChartName())
}

// rollback rolls a failed upgrade back to the previous release
// (rollback_remediation.go).
func (d *Driver) rollback(req *request) {
	prev := req.status.History.Previous(req.spec.Test.IgnoreFailures)
	if prev == nil {
		req.mark(helmv2.RemediatedCondition, metav1.ConditionFalse, helmv2.RollbackFailedReason, "no previous release to roll back to")
		return
	}
	rb := action.NewRollback(req.cfg)
	rb.Version, rb.Timeout, rb.WaitStrategy = prev.Version, req.timeout, kube.StatusWatcherStrategy
	rb.MaxHistory = 5
	var err error
	req.observing(req.replaceIn(helmv2.ReleaseActionRollback, true), func() { err = rb.Run(req.name) })
	if err != nil {
		req.mark(helmv2.RemediatedCondition, metav1.ConditionFalse, helmv2.RollbackFailedReason, fmtRollbackErr, prev.FullReleaseName(), prev.VersionedChartName(), strings.TrimSpace(waitError(err).Error()))
		return
	}
	req.mark(helmv2.RemediatedCondition, metav1.ConditionTrue, helmv2.RollbackSucceededReason, fmtRollbackOK, prev.FullReleaseName(), prev.VersionedChartName())
}
