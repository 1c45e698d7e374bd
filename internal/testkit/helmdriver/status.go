package helmdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/opencontainers/go-digest"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// mark changes a HelmRelease's status conditions; observed says the status
// now speaks for the current generation (status.observedGeneration).
type mark struct {
	set      []metav1.Condition
	remove   []string
	observed bool
}

func markReconciling(msg string) mark {
	return mark{set: []metav1.Condition{
		{Type: meta.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: meta.ProgressingReason, Message: msg},
		{Type: meta.ReadyCondition, Status: metav1.ConditionUnknown, Reason: meta.ProgressingReason, Message: msg},
	}}
}

func markFalse(reason, msg string) mark {
	return mark{set: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg}}}
}

// markSourceNotReady: Ready False and, as at the start of every reconcile of
// helm-controller, Reconciling (kstatus: in progress).
func markSourceNotReady(msg string) mark {
	return mark{set: []metav1.Condition{
		{Type: meta.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: meta.ProgressingReason, Message: msg},
		{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "SourceNotReady", Message: msg},
	}}
}

func markReady(lastAction string) mark {
	reason, msg := "InstallSucceeded", "Helm install succeeded"
	switch lastAction {
	case "upgrade":
		reason, msg = "UpgradeSucceeded", "Helm upgrade succeeded"
	case "":
		msg = "Helm release is up to date"
	}
	return mark{
		set:      []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: reason, Message: msg}},
		remove:   []string{meta.ReconcilingCondition, meta.StalledCondition},
		observed: true,
	}
}

func markStalled(msg string) mark {
	return mark{
		set: []metav1.Condition{
			{Type: meta.StalledCondition, Status: metav1.ConditionTrue, Reason: "RetriesExceeded", Message: msg},
			{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "RetriesExceeded", Message: msg},
		},
		remove:   []string{meta.ReconcilingCondition},
		observed: true,
	}
}

// setStatus writes m into the HelmRelease's status. A HelmRelease gone is
// left to the next reconcile, as a patch failure would.
func (d *Driver) setStatus(ctx context.Context, req *request, m mark) {
	hr := req.hr
	conds, _, _ := unstructured.NestedSlice(hr.Object, "status", "conditions")
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second)).Format(time.RFC3339)
	for _, c := range m.set {
		entry := map[string]any{
			"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"observedGeneration": hr.GetGeneration(), "lastTransitionTime": now,
		}
		replaced := false
		for i, old := range conds {
			if o, _ := old.(map[string]any); o["type"] == c.Type {
				if o["status"] == string(c.Status) {
					entry["lastTransitionTime"] = o["lastTransitionTime"]
				}
				conds[i], replaced = entry, true
			}
		}
		if !replaced {
			conds = append(conds, entry)
		}
	}
	kept := conds[:0]
	for _, c := range conds {
		if o, _ := c.(map[string]any); !slices.Contains(m.remove, fmt.Sprint(o["type"])) {
			kept = append(kept, c)
		}
	}
	status := map[string]any{"conditions": kept}
	if history := snapshot(req); history != nil {
		status["history"] = history
	}
	if req.chart != nil && req.chart.Metadata != nil {
		status["lastAttemptedRevision"] = req.chart.Metadata.Version
	}
	if m.observed {
		status["observedGeneration"] = hr.GetGeneration()
	}
	// A merge patch of the status, as helm-controller's patch helper: it
	// does not depend on the object's resourceVersion.
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return
	}
	updated, err := d.dyn.Resource(helmReleaseGVR).Namespace(hr.GetNamespace()).Patch(ctx, hr.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err == nil {
		req.hr = updated
	}
}

// snapshot is status.history as helm-controller keeps it (api/v2's Snapshot,
// newest first, written with every status): here the newest Helm release of
// the HelmRelease only, with its chart's name and version, status and times;
// the digests are the stand-in's own (of the release's name and version, and
// of its values), in the same sha256 form. nil before the first release.
func snapshot(req *request) []any {
	last, err := req.cfg.Releases.Last(req.name)
	if err != nil {
		return nil
	}
	rel, ok := last.(*releasev1.Release)
	if !ok || rel.Chart == nil || rel.Chart.Metadata == nil || rel.Info == nil {
		return nil
	}
	config, _ := json.Marshal(rel.Config)
	s := map[string]any{
		"apiVersion":    "helm.sh/v4",
		"name":          rel.Name,
		"namespace":     rel.Namespace,
		"version":       int64(rel.Version),
		"status":        string(rel.Info.Status),
		"chartName":     rel.Chart.Metadata.Name,
		"chartVersion":  rel.Chart.Metadata.Version,
		"digest":        digest.FromString(fmt.Sprintf("%s.v%d", rel.Name, rel.Version)).String(),
		"configDigest":  digest.FromBytes(config).String(),
		"firstDeployed": rel.Info.FirstDeployed.UTC().Format(time.RFC3339),
		"lastDeployed":  rel.Info.LastDeployed.UTC().Format(time.RFC3339),
	}
	if v := rel.Chart.Metadata.AppVersion; v != "" {
		s["appVersion"] = v
	}
	return []any{s}
}
