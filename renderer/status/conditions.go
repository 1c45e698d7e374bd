package status

import (
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// retrying says whether helm-controller will try the release again by
// itself: between two attempts it keeps Reconciling=True with the reason
// ProgressingWithRetry beside Ready=False (internal/reconcile/
// atomic_release.go), until the retries are spent and it is Stalled. A
// failing source (Degraded without it) is not: it retries on its interval
// what failed, so a wait for a rollout stops there.
func retrying(r targetreport.Release) bool {
	for _, c := range r.HelmConditions {
		if c.Type == "Reconciling" && c.Status == metav1.ConditionTrue && c.Reason == "ProgressingWithRetry" {
			return true
		}
	}
	return false
}

// waiting says whether the release waits for another (its HelmRelease's
// spec.dependsOn): helm-controller keeps it Ready=False with the reason
// DependencyNotReady, naming the HelmRelease it waits for, and looks again
// after --requeue-dependency (internal/controller/helmrelease_controller.go,
// v1.6.3, lines 241-264). That is the order working, not a failure.
func waiting(r targetreport.Release) bool {
	for _, c := range r.HelmConditions {
		if c.Type == "Ready" && c.Status == metav1.ConditionFalse && c.Reason == helmv2.DependencyNotReadyReason {
			return true
		}
	}
	return false
}

// sourcePending says whether the release waits for a source that is not
// ready yet and not failing: helm-controller keeps the HelmRelease
// Ready=False with the reason SourceNotReady (beside Reconciling=True) and
// looks again, while the OCIRepository it names has no Ready condition yet
// or an Unknown one (source-controller has not fetched it yet: moments
// after a publish). A source that failed (Ready=False) is a failure.
func sourcePending(r targetreport.Release) bool {
	for _, c := range r.SourceConditions {
		if c.Type == "Ready" && c.Status == metav1.ConditionFalse {
			return false
		}
	}
	for _, c := range r.HelmConditions {
		if c.Type == "Ready" && c.Status == metav1.ConditionFalse && c.Reason == "SourceNotReady" {
			return true
		}
	}
	return false
}

// failing says why a release is not Ready: the message of the first Ready
// condition that is not True, the HelmRelease's first. helm-controller
// summarizes Ready from its last action, so after a rollback or an uninstall
// Ready says only that the remediation succeeded; the failed release
// action's message (Released False) goes before it, and a Stalled one
// (retries spent) first, each part ended by "; ".
func failing(r targetreport.Release) string {
	var ready string
	for _, c := range append(r.HelmConditions, r.SourceConditions...) {
		if c.Type == "Ready" && c.Status != metav1.ConditionTrue {
			ready = c.Message
			break
		}
	}
	if ready == "" {
		return ""
	}
	var stalled, released string
	for _, c := range r.HelmConditions {
		switch {
		case c.Type == "Stalled" && c.Status == metav1.ConditionTrue:
			stalled = c.Message
		case c.Type == "Released" && c.Status == metav1.ConditionFalse && c.Message != ready:
			released = c.Message
		}
	}
	var parts []string
	for _, p := range []string{stalled, released, ready} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "; ")
}
