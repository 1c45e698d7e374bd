package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// targetStatus is #TargetStatus of the schemas.
type targetStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Bootstrap          *bootstrap         `json:"bootstrap,omitempty"`
}

type bootstrap struct {
	Repository string `json:"repository"`
	Version    string `json:"version"`
	Digest     string `json:"digest"`
}

// writeStatuses writes each Target's status of ns where it changed. The
// cache says whether it did: a run of unchanged input asks the API server
// nothing.
func (r *reconciler) writeStatuses(ctx context.Context, ns string, out outcomes) error {
	targets, err := list(ctx, r.client, api.KindTarget, ns)
	if err != nil {
		return err
	}
	var errs []error
	for i := range targets {
		name, o := targets[i].GetName(), out.targets[targets[i].GetName()]
		generation, planned := out.generations[name]
		if !planned {
			continue // created during the run: its own event runs it
		}
		change := func(st *targetStatus) {
			// The generation the run read, not a newer one edited since:
			// observedGeneration never claims what was not planned.
			st.ObservedGeneration = generation
			apply(st, out, o)
		}
		// The cached object first; when it is stale (the credential's
		// condition was written since), the API server's.
		err := r.updateStatus(ctx, targets[i].DeepCopy(), change)
		if apierrors.IsConflict(err) {
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				return r.writeStatus(ctx, ns, name, change)
			})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("writing the status of Target %s/%s: %w", ns, name, err))
		}
	}
	return errors.Join(errs...)
}

// writeStatus reads the Target from the API server, not the cache (the
// credential's condition may be newer), changes its status with change and
// writes it when it differs.
func (r *reconciler) writeStatus(ctx context.Context, ns, name string, change func(*targetStatus)) error {
	u := newObject(api.KindTarget)
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return client.IgnoreNotFound(err)
	}
	return r.updateStatus(ctx, u, change)
}

// updateStatus writes u's status after change, when it differs.
func (r *reconciler) updateStatus(ctx context.Context, u *unstructured.Unstructured, change func(*targetStatus)) error {
	raw, changed, err := changedStatus(u, change)
	if err != nil || !changed {
		return err
	}
	if err := unstructured.SetNestedField(u.Object, raw, "status"); err != nil {
		return err
	}
	return client.IgnoreNotFound(r.client.Status().Update(ctx, u))
}

// changedStatus is u's status after change, and whether it differs from
// u's.
func changedStatus(u *unstructured.Unstructured, change func(*targetStatus)) (map[string]any, bool, error) {
	var st targetStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		if err := fromUnstructured(raw, &st); err != nil {
			return nil, false, fmt.Errorf("reading status: %w", err)
		}
	}
	before := *st.DeepCopy()
	change(&st)
	if reflect.DeepEqual(before, st) {
		return nil, false, nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	return raw, true, err
}

// apply sets Ready, Reconciling and Stalled, and the bootstrap chart, from
// the outcome of one Target.
func apply(st *targetStatus, out outcomes, o targetOutcome) {
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status,
			Reason: reason, Message: msg, ObservedGeneration: st.ObservedGeneration})
	}
	settled := func() {
		apimeta.RemoveStatusCondition(&st.Conditions, meta.ReconcilingCondition)
		apimeta.RemoveStatusCondition(&st.Conditions, meta.StalledCondition)
	}
	held := o.published != nil && o.published.Action == pipeline.Held
	if p := o.published; p != nil && !held {
		st.Bootstrap = &bootstrap{Repository: p.Repository, Version: p.Version, Digest: p.Digest}
	}
	switch c := o.credential; {
	case c != nil && c.Reason == api.ReasonMintFailed:
		msg := targetreport.BoundMessage("the agent credential is not issued, retrying: " + c.Message)
		set(meta.ReadyCondition, metav1.ConditionFalse, api.ReasonMintFailed, msg)
		set(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, msg)
		apimeta.RemoveStatusCondition(&st.Conditions, meta.StalledCondition)
	case out.problems != "" || o.problems != "":
		msg := targetreport.BoundMessage(joinLines(out.problems, o.problems))
		set(meta.ReadyCondition, metav1.ConditionFalse, api.ReasonInvalidInput, msg)
		set(meta.StalledCondition, metav1.ConditionTrue, api.ReasonInvalidInput, msg)
		apimeta.RemoveStatusCondition(&st.Conditions, meta.ReconcilingCondition)
	case out.runErr != nil && o.published == nil:
		msg := targetreport.BoundMessage("retrying: " + out.runErr.Error())
		set(meta.ReadyCondition, metav1.ConditionFalse, api.ReasonPublishFailed, msg)
		set(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, msg)
		apimeta.RemoveStatusCondition(&st.Conditions, meta.StalledCondition)
	case held && o.published.Rollout != nil:
		m := o.published.Rollout
		msg := targetreport.BoundMessage(fmt.Sprintf("held by Rollout %s until wave %s starts: %s", m.Rollout, m.Wave, m.Reason))
		set(meta.ReadyCondition, metav1.ConditionFalse, api.ReasonRolloutHeld, msg)
		set(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingReason, msg)
		apimeta.RemoveStatusCondition(&st.Conditions, meta.StalledCondition)
	case o.published != nil:
		set(meta.ReadyCondition, metav1.ConditionTrue, meta.SucceededReason,
			fmt.Sprintf("bootstrap chart %s:%s published", o.published.Repository, o.published.Version))
		settled()
	}
}

func joinLines(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n" + b
}

// DeepCopy copies a status, conditions and all.
func (s *targetStatus) DeepCopy() *targetStatus {
	c := *s
	c.Conditions = append([]metav1.Condition(nil), s.Conditions...)
	if s.Bootstrap != nil {
		b := *s.Bootstrap
		c.Bootstrap = &b
	}
	return &c
}

func fromUnstructured(raw map[string]any, st *targetStatus) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(raw, st)
}
