package helmdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// atomicRelease runs Helm actions until the release is as desired, one
// action of each kind (release, test, remediate) at most, and stops after a
// remediation: the loop of internal/reconcile/atomic_release.go
// (AtomicRelease.Reconcile, lines 167-318).
func (d *Driver) atomicRelease(ctx context.Context, req *request) (result, error) {
	var previous []string
	for {
		next, stall, err := d.nextAction(req)
		if err != nil {
			return result{}, err
		}
		if stall != "" {
			return d.stall(ctx, req, stall)
		}
		if next == "" {
			req.unmark(meta.ReconcilingCondition)
			req.summarize()
			req.observed()
			d.write(ctx, req)
			return result{}, nil
		}
		kind := actionKind(next)
		if slices.Contains(previous, kind) {
			// Not allowed to run it now: retried on the next reconcile.
			req.mark(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, "%s", req.message(meta.ReadyCondition))
			d.write(ctx, req)
			return result{requeue: true}, nil
		}
		msg := fmt.Sprintf("Running '%s' action with timeout of %s", next, req.timeout)
		req.mark(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingReason, "%s", msg)
		if kind == "release" {
			req.mark(meta.ReadyCondition, metav1.ConditionUnknown, meta.ProgressingReason, "%s", msg)
		}
		d.write(ctx, req)
		d.run(ctx, req, next)
		if kind == "remediate" {
			// Retries exhausted after remediation: stall now.
			if stall := exhausted(req); stall != "" {
				return d.stall(ctx, req, stall)
			}
			req.mark(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, "%s", req.message(meta.ReadyCondition))
			d.write(ctx, req)
			return result{requeue: true}, nil
		}
		previous = append(previous, kind)
		d.write(ctx, req)
	}
}

// stall marks the HelmRelease Stalled (RetriesExceeded): nothing more is
// tried until its spec changes. Ready keeps what the last action said.
func (d *Driver) stall(ctx context.Context, req *request, why string) (result, error) {
	d.mu.Lock()
	d.stalled[req.key] = why
	d.mu.Unlock()
	req.mark(meta.StalledCondition, metav1.ConditionTrue, "RetriesExceeded", "%s", why)
	req.unmark(meta.ReconcilingCondition)
	req.observed()
	d.write(ctx, req)
	return result{}, nil
}

func actionKind(next string) string {
	switch next {
	case "uninstall", "rollback":
		return "remediate"
	case "test":
		return "test"
	}
	return "release"
}

// nextAction says what to do in the release's current state (actionForState
// of atomic_release.go, lines 320-470): "", install, upgrade, test (a
// release not yet tested, with tests on), uninstall (remediation of a failed
// install) or rollback (of a failed upgrade); or why it stalls.
func (d *Driver) nextAction(req *request) (next, stall string, err error) {
	last, err := req.cfg.Releases.Last(req.name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		if req.status.InstallFailures > int64(req.spec.Install.Remediation.Retries) {
			return "", fmt.Sprintf("Failed to install after %d attempt(s)", req.status.InstallFailures), nil
		}
		return "install", "", nil
	}
	if err != nil {
		return "", "", err
	}
	rel, ok := last.(*releasev1.Release)
	if !ok {
		return "", "", fmt.Errorf("release %s: only chart API v2 releases are driven here", req.name)
	}
	// DetermineReleaseState (state.go) reads the newest snapshot, which
	// sorts the history by version.
	req.status.History.Latest()
	switch rel.Info.Status {
	case common.StatusDeployed:
		if !unchanged(rel.Chart, req.chart, rel.Config, req.values) {
			if req.status.UpgradeFailures > int64(req.spec.Upgrade.Remediation.Retries) {
				return "", fmt.Sprintf("Failed to upgrade after %d attempt(s)", req.status.UpgradeFailures), nil
			}
			return "upgrade", "", nil
		}
		if req.spec.Test.Enable && !req.status.History.Latest().HasBeenTested() {
			return "test", "", nil
		}
		req.inSync()
		return "", "", nil
	case common.StatusFailed, common.StatusPendingInstall, common.StatusPendingUpgrade, common.StatusPendingRollback:
		if stall := exhausted(req); stall != "" && !mustRemediateLast(req) {
			return "", stall, nil
		}
		if req.status.LastAttemptedReleaseAction == "" && rel.Version > 1 {
			req.status.LastAttemptedReleaseAction = helmv2.ReleaseActionUpgrade
		}
		// The history up to the failure, so that failures do not pile up.
		req.status.History.Truncate(req.spec.Test.IgnoreFailures)
		if req.status.LastAttemptedReleaseAction == helmv2.ReleaseActionUpgrade {
			return "rollback", "", nil
		}
		return "uninstall", "", nil
	default:
		return "", "", fmt.Errorf("release %s: status %s", req.name, rel.Info.Status)
	}
}

// inSync is what helm-controller writes of a release in sync with its
// HelmRelease (atomic_release.go, ReleaseStatusInSync): the history
// truncated, and, with drift detection on, Drifted False. The driver does
// not compare the cluster with the release: the tests change no object
// behind Helm's back, so there is no drift to find.
func (req *request) inSync() {
	req.status.History.Truncate(req.spec.Test.IgnoreFailures)
	if mode := req.spec.DriftDetection.Mode; mode == string(helmv2.DriftDetectionEnabled) || mode == string(helmv2.DriftDetectionWarn) {
		req.mark(helmv2.DriftedCondition, metav1.ConditionFalse, helmv2.NoDriftDetectedReason, "No drift detected against the cluster state")
	}
}

// exhausted says why the active remediation has no retries left, or "".
func exhausted(req *request) string {
	if req.status.LastAttemptedReleaseAction == helmv2.ReleaseActionUpgrade {
		if req.status.UpgradeFailures > int64(req.spec.Upgrade.Remediation.Retries) {
			return fmt.Sprintf("Failed to upgrade after %d attempt(s)", req.status.UpgradeFailures)
		}
		return ""
	}
	if req.status.InstallFailures > int64(req.spec.Install.Remediation.Retries) {
		return fmt.Sprintf("Failed to install after %d attempt(s)", req.status.InstallFailures)
	}
	return ""
}

// mustRemediateLast says whether the last failure is remediated even when
// retries are exhausted (api/v2/helmrelease_types.go,
// MustRemediateLastFailure: install remediation defaults to false, upgrade
// remediation to retries > 0); without it the HelmRelease stalls with the
// failed release left in place.
func mustRemediateLast(req *request) bool {
	if req.status.LastAttemptedReleaseAction == helmv2.ReleaseActionUpgrade {
		return req.spec.Upgrade.Remediation.Retries > 0
	}
	return false
}
