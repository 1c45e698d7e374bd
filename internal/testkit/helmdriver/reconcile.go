package helmdriver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/renderer/chain"
)

// result is what a reconcile asks of the queue. fingerprint, when set, says
// the HelmRelease is done with the state it names.
type result struct {
	fingerprint  string
	requeue      bool
	requeueAfter time.Duration
	// waiting, when set, is why the HelmRelease waits (a dependency not
	// Ready): Settle names it beside a HelmRelease not done.
	waiting string
}

// spec is the part of a HelmRelease the driver reads.
type spec struct {
	ChartRef struct {
		Kind, Name, Namespace string
	} `json:"chartRef"`
	TargetNamespace  string           `json:"targetNamespace"`
	StorageNamespace string           `json:"storageNamespace"`
	ReleaseName      string           `json:"releaseName"`
	Timeout          *metav1.Duration `json:"timeout"`
	Install          struct {
		CreateNamespace bool `json:"createNamespace"`
		DisableWait     bool `json:"disableWait"`
		Remediation     struct {
			Retries int `json:"retries"`
		} `json:"remediation"`
	} `json:"install"`
	Upgrade struct {
		DisableWait bool `json:"disableWait"`
		Remediation struct {
			Retries int `json:"retries"`
		} `json:"remediation"`
	} `json:"upgrade"`
	Test struct {
		Enable         bool `json:"enable"`
		IgnoreFailures bool `json:"ignoreFailures"`
	} `json:"test"`
	DriftDetection struct {
		Mode string `json:"mode"`
	} `json:"driftDetection"`
	ValuesFrom []struct {
		Kind, Name, ValuesKey, TargetPath string
		Optional                          bool
	} `json:"valuesFrom"`
	Values    map[string]any `json:"values"`
	DependsOn []dependency   `json:"dependsOn"`
}

// request is one reconcile of one HelmRelease.
type request struct {
	hr      *unstructured.Unstructured
	spec    spec
	name    string // the Helm release
	ns      string // its namespace
	cfg     *action.Configuration
	chart   *chart.Chart
	values  map[string]any
	key     string
	timeout time.Duration
	// status is what the driver writes back; ociDigest the chart
	// artifact's digest (status.lastAttemptedRevisionDigest).
	status    helmv2.HelmReleaseStatus
	ociDigest string
	obs       *observer
}

func (d *Driver) reconcileKey(ctx context.Context, key string) (result, error) {
	ns, name, _ := strings.Cut(key, "/")
	hr, err := d.dyn.Resource(helmReleaseGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return result{}, nil
	}
	if err != nil {
		return result{}, err
	}
	var s spec
	raw, _, _ := unstructured.NestedMap(hr.Object, "spec")
	b, err := json.Marshal(raw)
	if err != nil {
		return result{}, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return result{}, fmt.Errorf("reading spec: %w", err)
	}
	req := &request{hr: hr, spec: s, key: key, status: loadStatus(hr)}
	req.name = cmp.Or(s.ReleaseName, chain.HelmReleaseName(hr.GetName(), s.TargetNamespace))
	req.ns = cmp.Or(s.TargetNamespace, ns)
	req.timeout = d.opts.Timeout
	if s.Timeout != nil {
		req.timeout = s.Timeout.Duration
	}
	if req.cfg, err = d.config(req.ns, cmp.Or(s.StorageNamespace, ns)); err != nil {
		return result{}, err
	}
	req.obs = &observer{Driver: req.cfg.Releases.Driver}
	req.cfg.Releases.Driver = req.obs
	if hr.GetDeletionTimestamp() != nil {
		return d.finalize(ctx, req)
	}
	if !slices.Contains(hr.GetFinalizers(), helmv2.HelmReleaseFinalizer) {
		hr.SetFinalizers(append(hr.GetFinalizers(), helmv2.HelmReleaseFinalizer))
		if req.hr, err = d.dyn.Resource(helmReleaseGVR).Namespace(ns).Update(ctx, hr, metav1.UpdateOptions{}); err != nil {
			return result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}

	if why := d.waitForDependencies(ctx, req); why != "" {
		return result{requeueAfter: d.opts.RequeueDependency, waiting: why}, nil
	}
	ch, artifact, wait, err := d.chart(ctx, ns, s)
	if me := (*mutateError)(nil); errors.As(err, &me) {
		req.mark(meta.ReadyCondition, metav1.ConditionFalse, "ChartMutateError", "%s", me.Error())
		d.write(ctx, req)
	}
	if err != nil {
		return result{}, err
	}
	if wait != "" {
		// As at the start of every reconcile of helm-controller, Reconciling
		// (kstatus: in progress) beside Ready False.
		req.mark(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingReason, "%s", wait)
		req.mark(meta.ReadyCondition, metav1.ConditionFalse, "SourceNotReady", "%s", wait)
		d.write(ctx, req)
		return result{requeueAfter: d.opts.RequeueDependency}, nil
	}
	if req.values, err = d.values(ctx, ns, s); err != nil {
		return result{}, err
	}
	req.chart, req.ociDigest = ch.chart, ch.digest
	d.resetFailures(req)
	req.status.LastAttemptedRevision, req.status.LastAttemptedRevisionDigest = ch.chart.Metadata.Version, ch.digest
	req.status.LastAttemptedGeneration = hr.GetGeneration()
	res, err := d.atomicRelease(ctx, req)
	if err == nil && res.fingerprint == "" && !res.requeue && res.requeueAfter == 0 {
		res.fingerprint = fingerprint(req.hr, artifact)
	}
	return res, err
}

// resetFailures clears the failure counts when the generation or the
// chart's version (its artifact digest included) changed since the last
// attempt, as MustResetFailures of internal/action/reset.go does (a values
// change is a new generation here: the driver reads no valuesFrom change),
// and a stalled HelmRelease is no longer stalled.
func (d *Driver) resetFailures(req *request) {
	st := &req.status
	if st.LastAttemptedGeneration == req.hr.GetGeneration() && st.LastAttemptedRevision == req.chart.Metadata.Version {
		return
	}
	st.ClearFailures()
	d.mu.Lock()
	delete(d.stalled, req.key)
	d.mu.Unlock()
}
