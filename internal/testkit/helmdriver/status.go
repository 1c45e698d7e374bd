package helmdriver

import (
	"context"
	"encoding/json"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// The conditions and messages below are helm-controller v1.6.3's, in its
// internal/reconcile package: install.go (fmtInstallFailure,
// fmtInstallSuccess, lines 135-140), upgrade.go (126-131), test.go
// (121-127, success 164-180), uninstall_remediation.go (139-144),
// rollback_remediation.go (123-128), atomic_release.go (Reconciling and
// Stalled, 200-310) and release.go (summarize, 194-273). The traces in
// testdata/helm-controller are what the real one wrote; TestConformance
// holds the driver to them.
const (
	fmtInstallFailure  = "Helm install failed for release %s/%s with chart %s@%s: %s"
	fmtInstallSuccess  = "Helm install succeeded for release %s with chart %s"
	fmtUpgradeFailure  = "Helm upgrade failed for release %s/%s with chart %s@%s: %s"
	fmtUpgradeSuccess  = "Helm upgrade succeeded for release %s with chart %s"
	fmtTestPending     = "Helm release %s with chart %s is awaiting tests"
	fmtTestFailure     = "Helm test failed for release %s with chart %s: %s"
	fmtTestSuccess     = "Helm test succeeded for release %s with chart %s: %s"
	fmtUninstallRemOK  = "Helm uninstall remediation for release %s with chart %s succeeded"
	fmtUninstallRemErr = "Helm uninstall remediation for release %s with chart %s failed: %s"
	fmtRollbackOK      = "Helm rollback to previous release %s with chart %s succeeded"
	fmtRollbackErr     = "Helm rollback to previous release %s with chart %s failed: %s"
)

// loadStatus is the HelmRelease's status as helm-controller's API type.
func loadStatus(hr *unstructured.Unstructured) helmv2.HelmReleaseStatus {
	var st helmv2.HelmReleaseStatus
	if raw, ok := hr.Object["status"]; ok {
		if b, err := json.Marshal(raw); err == nil {
			_ = json.Unmarshal(b, &st) // a status the driver cannot read starts afresh
		}
	}
	return st
}

// mark sets a condition about the HelmRelease's current generation.
func (r *request) mark(typ string, status metav1.ConditionStatus, reason, format string, args ...any) {
	apimeta.SetStatusCondition(&r.status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...),
		ObservedGeneration: r.hr.GetGeneration(),
	})
}

// unmark removes a condition.
func (r *request) unmark(types ...string) {
	for _, t := range types {
		apimeta.RemoveStatusCondition(&r.status.Conditions, t)
	}
}

// message is the message of the condition of type typ, "" without one.
func (r *request) message(typ string) string {
	if c := apimeta.FindStatusCondition(r.status.Conditions, typ); c != nil {
		return c.Message
	}
	return ""
}

// summarize composes Ready from Remediated, TestSuccess (when tests are on)
// and Released, the first of them that is set, as release.go's summarize
// does: a Remediated one makes Ready False; a True Ready clears Stalled.
func (r *request) summarize() {
	order := []string{helmv2.RemediatedCondition, helmv2.ReleasedCondition}
	if r.spec.Test.Enable && !r.spec.Test.IgnoreFailures {
		order = []string{helmv2.RemediatedCondition, helmv2.TestSuccessCondition, helmv2.ReleasedCondition}
	}
	if !r.spec.Test.Enable {
		r.unmark(helmv2.TestSuccessCondition)
	}
	for _, t := range order {
		c := apimeta.FindStatusCondition(r.status.Conditions, t)
		if c == nil {
			continue
		}
		status := c.Status
		if t == helmv2.RemediatedCondition {
			status = metav1.ConditionFalse
		}
		if status == metav1.ConditionTrue {
			r.unmark(meta.StalledCondition)
		}
		r.mark(meta.ReadyCondition, status, c.Reason, "%s", c.Message)
		return
	}
}

// write patches the HelmRelease's status with what r holds: a merge patch,
// as helm-controller's patch helper (it does not depend on the object's
// resourceVersion), in which a field r no longer has is removed. A
// HelmRelease gone is left to the next reconcile, as a patch failure would.
func (d *Driver) write(ctx context.Context, r *request) {
	b, err := json.Marshal(r.status)
	if err != nil {
		return
	}
	var status map[string]any
	if json.Unmarshal(b, &status) != nil {
		return
	}
	old, _, _ := unstructured.NestedMap(r.hr.Object, "status")
	for k := range old {
		if _, ok := status[k]; !ok {
			status[k] = nil
		}
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return
	}
	updated, err := d.dyn.Resource(helmReleaseGVR).Namespace(r.hr.GetNamespace()).Patch(ctx, r.hr.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err == nil {
		r.hr = updated
	}
}

// observed says the status now speaks for the current generation
// (status.observedGeneration), as helm-controller says once it is done.
func (r *request) observed() {
	r.status.ObservedGeneration = r.hr.GetGeneration()
}
