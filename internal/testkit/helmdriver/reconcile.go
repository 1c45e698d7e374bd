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
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
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
	ValuesFrom []struct {
		Kind, Name, ValuesKey, TargetPath string
		Optional                          bool
	} `json:"valuesFrom"`
	Values map[string]any `json:"values"`
}

// attempts counts the failed installs and upgrades of one generation, as
// status.installFailures and status.upgradeFailures do.
type attempts struct {
	generation       int64
	install, upgrade int
	lastAction       string // install or upgrade
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
	att     *attempts
	key     string
	timeout time.Duration
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
	req := &request{hr: hr, spec: s, key: key}
	req.name = cmp.Or(s.ReleaseName, chain.HelmReleaseName(hr.GetName(), s.TargetNamespace))
	req.ns = cmp.Or(s.TargetNamespace, ns)
	req.timeout = d.opts.Timeout
	if s.Timeout != nil {
		req.timeout = s.Timeout.Duration
	}
	if req.cfg, err = d.config(req.ns, cmp.Or(s.StorageNamespace, ns)); err != nil {
		return result{}, err
	}
	if hr.GetDeletionTimestamp() != nil {
		return d.finalize(ctx, req)
	}
	if !slices.Contains(hr.GetFinalizers(), helmv2.HelmReleaseFinalizer) {
		hr.SetFinalizers(append(hr.GetFinalizers(), helmv2.HelmReleaseFinalizer))
		if req.hr, err = d.dyn.Resource(helmReleaseGVR).Namespace(ns).Update(ctx, hr, metav1.UpdateOptions{}); err != nil {
			return result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}

	ch, artifact, wait, err := d.chart(ctx, ns, s)
	if err != nil {
		return result{}, err
	}
	if wait != "" {
		d.setStatus(ctx, req, markSourceNotReady(wait))
		return result{requeueAfter: d.opts.RequeueDependency}, nil
	}
	if req.values, err = d.values(ctx, ns, s); err != nil {
		return result{}, err
	}
	req.chart = ch
	req.att = d.attemptsOf(key, hr.GetGeneration())
	res, err := d.atomicRelease(ctx, req)
	if err == nil && res.fingerprint == "" && !res.requeue && res.requeueAfter == 0 {
		res.fingerprint = fingerprint(req.hr, artifact)
	}
	return res, err
}

// attemptsOf returns the failure counts of key's generation: a new
// generation starts from none (and is no longer stalled).
func (d *Driver) attemptsOf(key string, generation int64) *attempts {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.attempts[key]
	if a == nil || a.generation != generation {
		a = &attempts{generation: generation}
		d.attempts[key] = a
		delete(d.stalled, key)
	}
	return a
}

// atomicRelease runs Helm actions until the release is as desired, one action
// of each kind at most, and stops after a remediation: the loop of
// internal/reconcile/atomic_release.go.
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
			d.setStatus(ctx, req, markReady(req.att.lastAction))
			return result{}, nil
		}
		kind := actionKind(next)
		if slices.Contains(previous, kind) {
			return result{requeue: true}, nil
		}
		d.setStatus(ctx, req, markReconciling(fmt.Sprintf("Running '%s' action with timeout of %s", next, req.timeout)))
		d.run(ctx, req, next)
		if kind == "remediate" {
			// Retries exhausted after remediation: stall now.
			if stall := exhausted(req); stall != "" {
				return d.stall(ctx, req, stall)
			}
			return result{requeue: true}, nil
		}
		previous = append(previous, kind)
	}
}

// stall marks the HelmRelease Stalled: nothing more is tried until its spec
// changes.
func (d *Driver) stall(ctx context.Context, req *request, why string) (result, error) {
	d.mu.Lock()
	d.stalled[req.key] = why
	d.mu.Unlock()
	d.setStatus(ctx, req, markStalled(why))
	return result{}, nil
}

func actionKind(next string) string {
	if next == "uninstall" || next == "rollback" {
		return "remediate"
	}
	return "release"
}

// nextAction says what to do in the release's current state (actionForState
// of atomic_release.go): "", install, upgrade, uninstall (remediation of a
// failed install) or rollback (of a failed upgrade); or why it stalls.
func (d *Driver) nextAction(req *request) (next, stall string, err error) {
	last, err := req.cfg.Releases.Last(req.name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		if req.att.install > req.spec.Install.Remediation.Retries {
			return "", fmt.Sprintf("Failed to install after %d attempt(s)", req.att.install), nil
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
	switch rel.Info.Status {
	case common.StatusDeployed:
		if unchanged(rel.Chart, req.chart, rel.Config, req.values) {
			return "", "", nil
		}
		if req.att.upgrade > req.spec.Upgrade.Remediation.Retries {
			return "", fmt.Sprintf("Failed to upgrade after %d attempt(s)", req.att.upgrade), nil
		}
		return "upgrade", "", nil
	case common.StatusFailed, common.StatusPendingInstall, common.StatusPendingUpgrade, common.StatusPendingRollback:
		if stall := exhausted(req); stall != "" && !mustRemediateLast(req) {
			return "", stall, nil
		}
		if req.att.lastAction == "" && rel.Version > 1 {
			req.att.lastAction = "upgrade"
		}
		if req.att.lastAction == "upgrade" {
			return "rollback", "", nil
		}
		return "uninstall", "", nil
	default:
		return "", "", fmt.Errorf("release %s: status %s", req.name, rel.Info.Status)
	}
}

// exhausted says why the active remediation has no retries left, or "".
func exhausted(req *request) string {
	if req.att.lastAction == "upgrade" {
		if req.att.upgrade > req.spec.Upgrade.Remediation.Retries {
			return fmt.Sprintf("Failed to upgrade after %d attempt(s)", req.att.upgrade)
		}
		return ""
	}
	if req.att.install > req.spec.Install.Remediation.Retries {
		return fmt.Sprintf("Failed to install after %d attempt(s)", req.att.install)
	}
	return ""
}

// mustRemediateLast says whether the last failure is remediated even when
// retries are exhausted (api/v2/helmrelease_types.go,
// MustRemediateLastFailure: install remediation defaults to false, upgrade
// remediation to retries > 0); without it the HelmRelease stalls with the
// failed release left in place.
func mustRemediateLast(req *request) bool {
	if req.att.lastAction == "upgrade" {
		return req.spec.Upgrade.Remediation.Retries > 0
	}
	return false
}

// run runs one Helm action and records it; a failed install or upgrade
// counts as a failure of the generation.
func (d *Driver) run(ctx context.Context, req *request, next string) {
	start := time.Now()
	ev := Event{Action: next, HelmRelease: req.key, Release: req.ns + "/" + req.name}
	var rel *releasev1.Release
	var err error
	switch next {
	case "install":
		req.att.lastAction = "install"
		rel, err = d.install(ctx, req)
	case "upgrade":
		req.att.lastAction = "upgrade"
		rel, err = d.upgrade(ctx, req)
	case "uninstall":
		err = d.uninstall(req)
	case "rollback":
		rb := action.NewRollback(req.cfg)
		rb.Timeout, rb.WaitStrategy = req.timeout, kube.StatusWatcherStrategy // Version 0: the previous one
		err = rb.Run(req.name)
	}
	ev.Took = time.Since(start)
	if rel != nil {
		ev.Revision = rel.Version
	}
	if err != nil {
		if next == "install" || next == "upgrade" {
			if next == "install" {
				req.att.install++
			} else {
				req.att.upgrade++
			}
			ev.Action = next + " failed"
		}
		d.setStatus(ctx, req, markFalse(upper(next)+"Failed", err.Error()))
	}
	d.record(ev)
}

func upper(s string) string { return string(s[0]-'a'+'A') + s[1:] }
