package helmdriver

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// dependency is an entry of spec.dependsOn (api/v2 DependencyReference;
// readyExpr, a CEL expression, is not reproduced: Solar writes none).
type dependency struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// waitForDependencies is helm-controller v1.6.3's wait for spec.dependsOn
// (internal/controller/helmrelease_controller.go at 372c34e2, lines
// 235-273): before the source is looked at, every dependency must be
// Ready; while one is not, the HelmRelease is Reconciling "Fulfilling
// prerequisites" (line 236) and Ready False, reason DependencyNotReady, with
// checkDependencies' error as the message (line 258), and is looked at again
// after --requeue-dependency (line 264; the error errWaitForDependency is
// ignored, line 162, so no back-off). It returns why the HelmRelease
// waits, "" when the reconcile goes on.
func (d *Driver) waitForDependencies(ctx context.Context, req *request) string {
	if len(req.spec.DependsOn) == 0 {
		return ""
	}
	err := d.checkDependencies(ctx, req)
	if err == nil {
		// Line 270: a stale DependencyNotReady becomes Unknown.
		if c := apimeta.FindStatusCondition(req.status.Conditions, meta.ReadyCondition); c != nil && c.Reason == helmv2.DependencyNotReadyReason {
			req.mark(meta.ReadyCondition, metav1.ConditionUnknown, meta.ProgressingReason, "reconciliation in progress")
		}
		return ""
	}
	req.mark(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingReason, "Fulfilling prerequisites")
	req.mark(meta.ReadyCondition, metav1.ConditionFalse, helmv2.DependencyNotReadyReason, "%s", err)
	d.write(ctx, req)
	return err.Error()
}

// checkDependencies is checkDependencies of the same file (lines 607-660):
// each dependency, in the HelmRelease's namespace unless it names another,
// must exist (read from the API server, not a cache), have
// status.observedGeneration equal to its generation, and be Ready; the
// first that is not is the error.
func (d *Driver) checkDependencies(ctx context.Context, req *request) error {
	for _, ref := range req.spec.DependsOn {
		name := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		if name.Namespace == "" {
			name.Namespace = req.hr.GetNamespace()
		}
		dep, err := d.dyn.Resource(helmReleaseGVR).Namespace(name.Namespace).Get(ctx, name.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("unable to get '%s' dependency: %w", name, err)
		}
		st := loadStatus(dep)
		if dep.GetGeneration() != st.ObservedGeneration || !apimeta.IsStatusConditionTrue(st.Conditions, meta.ReadyCondition) {
			return fmt.Errorf("dependency '%s' is not ready", name)
		}
	}
	return nil
}
