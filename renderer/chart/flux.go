package chart

import (
	"encoding/json"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/solar-pipeline/solar/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Interval is how often Flux reconciles the objects the charts create.
const Interval = 10 * time.Minute

// The Flux policy every OCIRepository and HelmRelease solar makes follows,
// defined here once: the first-contact objects use these values, and the
// charts get them as values (the templates only copy them).

// LayerSelector takes the chart layer of an OCI artifact as it is.
func LayerSelector() *sourcev1.OCILayerSelector {
	return &sourcev1.OCILayerSelector{MediaType: api.MediaTypeHelmChart, Operation: sourcev1.OCILayerCopy}
}

// Remediation is the install, upgrade, test and drift policy of every
// HelmRelease: its timeout and retries, Helm tests, drift detection, and
// whether helm-controller waits for the release's objects to become ready.
type Remediation struct {
	// Timeout is spec.timeout; nil leaves helm-controller's default (5m).
	Timeout        *metav1.Duration       `json:"timeout,omitempty"`
	Install        *helmv2.Install        `json:"install"`
	Upgrade        *helmv2.Upgrade        `json:"upgrade"`
	Test           *helmv2.Test           `json:"test"`
	DriftDetection *helmv2.DriftDetection `json:"driftDetection"`
}

// ChainPolicy is the policy of the HelmReleases of levels 1 and 2 (the
// first-contact HelmRelease and the bootstrap chart's): their charts hold only
// Flux objects and their ConfigMaps and Secrets, so they do not wait.
//
// helm-controller (Helm 4) waits with kstatus until every object of a release
// is ready and holds one of its workers (--concurrent, default 4) meanwhile
// (internal/action/wait.go, getWaitStrategy; main.go). A HelmRelease is ready
// for kstatus only once a worker has reconciled it (status.observedGeneration
// starts at -1, api/v2/helmrelease_types.go), so a parent that waits for its
// child HelmReleases holds a worker the children need: with four parents
// waiting no child ever gets one, every install times out after 5 minutes,
// and remediation uninstalls it with its children, again and again until its
// retries are spent. disableWait makes the action wait
// for hooks only (HookOnlyStrategy). The parents' readiness is their
// children's to report.
//
// The operator's AppOptions do not reach these levels: without a readiness
// wait, and with charts that have neither hooks nor tests, spec.timeout bounds
// nothing here; and a failure of these levels is a broken chart or cluster,
// not an application starting slowly, so they keep DefaultRetries.
func ChainPolicy() Remediation {
	p := AppPolicy(false, AppOptions{})
	p.Install.DisableWait = true
	p.Upgrade.DisableWait = true
	return p
}

// AppPolicy is the policy of the application's HelmRelease (level 3): Helm's
// readiness wait and remediation stay on, with the operator's timeout and
// retries (opts). createNamespace creates the targetNamespace on install.
func AppPolicy(createNamespace bool, opts AppOptions) Remediation {
	retries := opts.retries()
	p := Remediation{
		Install:        &helmv2.Install{CreateNamespace: createNamespace, Remediation: &helmv2.InstallRemediation{Retries: retries}},
		Upgrade:        &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: retries}},
		Test:           &helmv2.Test{Enable: true},
		DriftDetection: &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled},
	}
	if opts.Timeout > 0 {
		p.Timeout = &metav1.Duration{Duration: opts.Timeout}
	}
	return p
}

// interval is Interval as Flux objects spell it.
func interval() metav1.Duration {
	return metav1.Duration{Duration: Interval}
}

// asValues turns a typed Flux value into chart values (as its JSON reads).
func asValues(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // Flux API types always marshal
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}
