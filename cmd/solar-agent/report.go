package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/buildinfo"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// The Flux kinds the agent reads on its own cluster, read-only (the agent
// chart's ClusterRole).
var (
	ociRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
	helmReleaseGVR   = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
)

// Annotations of the TargetReport that say who wrote it: not in SolAr's
// spec, which holds only what Flux did.
const ()

// report reads the Target, collects what Flux did on this cluster, and
// writes the TargetReport when that changed, when the last report is older
// than the maximum age (a heartbeat: a stale lastReportTime is the
// liveness signal), or when force is set (--once).
func (a *agent) report(ctx context.Context, force bool) error {
	if _, err := a.client.Resource(kube.TargetGVR).Namespace(a.namespace).Get(ctx, a.target, metav1.GetOptions{}); err != nil {
		return a.explain("reading Target", err)
	}
	spec := a.collect(ctx)
	reports := a.client.Resource(kube.TargetReportGVR).Namespace(a.namespace)
	report, err := reports.Get(ctx, a.target, metav1.GetOptions{})
	if err != nil {
		return a.explain("reading TargetReport", err)
	}
	prev := targetreport.Decode(report.Object)
	now := a.now().UTC().Truncate(time.Second)
	last := prev.LastReportTime.Time
	if last.After(now.Add(time.Second)) {
		// Dated in the future (a clock that was wrong): not built on.
		last = time.Time{}
	}
	if !force && !last.IsZero() && targetreport.SameState(prev, spec) && now.Sub(last) < a.maxAge {
		a.log.Debug("unchanged", "target", a.namespace+"/"+a.target)
		return nil
	}
	// It advances with every write, also within one second.
	if !now.After(last) {
		now = last.Add(time.Second)
	}
	spec.LastReportTime = metav1.NewTime(now)
	if err := setSpec(report, spec); err != nil {
		return err
	}
	host, _ := os.Hostname()
	annotations := report.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[api.AnnotationAgentVersion] = buildinfo.Read().Version
	annotations[api.AnnotationAgentHost] = host + " " + runtime.GOOS + "/" + runtime.GOARCH
	report.SetAnnotations(annotations)
	if _, err := reports.Update(ctx, report, metav1.UpdateOptions{}); err != nil {
		return a.explain("updating TargetReport", err)
	}
	a.writes.Add(1)
	a.log.Info("reported", "target", a.namespace+"/"+a.target, "time", spec.LastReportTime.Format(time.RFC3339), "releases", len(spec.Releases))
	return nil
}

// collect reads the Flux objects of this cluster that solar's charts
// labelled, and says whether it could (the preflight check FluxReadable).
func (a *agent) collect(ctx context.Context) targetreport.Spec {
	var spec targetreport.Spec
	check := targetreport.Check{Type: "FluxReadable", Status: metav1.ConditionTrue, Reason: "Listed"}
	if a.cluster == nil {
		check = targetreport.Check{Type: "FluxReadable", Status: metav1.ConditionUnknown, Reason: "NoClusterAccess",
			Message: "the agent runs without access to its cluster (not in a Pod, and no --cluster-kubeconfig)"}
	} else {
		sources, err1 := a.list(ctx, ociRepositoryGVR)
		helms, err2 := a.list(ctx, helmReleaseGVR)
		if err := cmp.Or(err1, err2); err != nil {
			check.Status, check.Reason, check.Message = metav1.ConditionFalse, reason(err), err.Error()
		} else {
			spec.Releases = targetreport.Collect(a.namespace, a.target, sources, helms)
		}
	}
	spec.Preflight.Checks = []targetreport.Check{check}
	spec.Sort()
	return spec
}

// list lists the objects of gvr that carry solar's release label, in every
// namespace.
func (a *agent) list(ctx context.Context, gvr schema.GroupVersionResource) ([]targetreport.Object, error) {
	l, err := a.cluster.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: api.LabelRelease})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvr.Resource, err)
	}
	out := make([]targetreport.Object, len(l.Items))
	for i := range l.Items {
		out[i] = l.Items[i].Object
	}
	return out, nil
}

// reason names why listing failed, PascalCase.
func reason(err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return "FluxNotInstalled"
	case apierrors.IsForbidden(err):
		return "Forbidden"
	}
	return "ListFailed"
}

// setSpec puts spec into the report, as JSON-shaped data.
func setSpec(report *unstructured.Unstructured, spec targetreport.Spec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	report.Object["spec"] = m
	return nil
}
