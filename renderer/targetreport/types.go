// Package targetreport is the TargetReport in SolAr's shape
// (api/solar/v1alpha1/targetreport_types.go of solution-arsenal, the same
// JSON field names), what a Target's solar-agent writes and solar status
// reads: per release the Flux state on the Target's cluster, rolled up into
// a phase, with the Flux conditions verbatim.
//
// It reads Flux objects as unstructured maps, so it needs no Flux module,
// and does no input or output.
package targetreport

import (
	"cmp"
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is the lifecycle state of one release on the Target's cluster,
// SolAr's ReleasePhase.
type Phase string

const (
	// Pending: no OCIRepository/HelmRelease pair exists yet for the release.
	Pending Phase = "Pending"
	// Progressing: Flux is still working towards the desired state.
	Progressing Phase = "Progressing"
	// Ready: both halves of the pair report Ready=True for their current
	// generation.
	Ready Phase = "Ready"
	// Degraded: not ready, and a retry is still coming.
	Degraded Phase = "Degraded"
	// Failed: not ready, and no retry is coming (helm-controller stalled:
	// remediation spent its retries).
	Failed Phase = "Failed"
)

// Spec is a TargetReport's spec: a full snapshot, never appended to.
type Spec struct {
	// LastReportTime advances with every write, a heartbeat included: a
	// stale one is the liveness signal.
	LastReportTime metav1.Time `json:"lastReportTime"`
	// Releases are the pairs observed, sorted by namespace and name.
	Releases []Release `json:"releases,omitempty"`
	// Preflight holds health-check results, sorted by type.
	Preflight Preflight `json:"preflight"`
}

// Release is one release's rolled-up state, SolAr's ReleaseReport.
type Release struct {
	// Name is the release's name (its SolAr Release).
	Name string `json:"name"`
	// Namespace is where the OCIRepository/HelmRelease pair lives.
	Namespace string `json:"namespace"`
	Phase     Phase  `json:"phase"`
	// Revision is the chart version live, if known.
	Revision string `json:"revision,omitempty"`
	// SourceConditions and HelmConditions are the pair's Flux conditions,
	// verbatim, sorted by type.
	SourceConditions []metav1.Condition `json:"sourceConditions,omitempty"`
	HelmConditions   []metav1.Condition `json:"helmConditions,omitempty"`
}

// Preflight holds the agent's health-check results.
type Preflight struct {
	Checks []Check `json:"checks,omitempty"`
}

// Check is one health-check result: a condition without generation and
// transition time.
type Check struct {
	Type    string                 `json:"type"`
	Status  metav1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason"`
	Message string                 `json:"message,omitempty"`
}

// Sort puts the spec in its canonical order (releases by namespace and
// name, conditions and checks by type), so that equal states compare equal.
func (s *Spec) Sort() {
	slices.SortFunc(s.Releases, func(a, b Release) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for i := range s.Releases {
		byType(s.Releases[i].SourceConditions)
		byType(s.Releases[i].HelmConditions)
	}
	slices.SortFunc(s.Preflight.Checks, func(a, b Check) int { return cmp.Compare(a.Type, b.Type) })
}

func byType(c []metav1.Condition) {
	slices.SortFunc(c, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
}

// Decode reads the spec of a TargetReport object (unstructured), sorted;
// an unreadable one reads as empty (its writer replaces it whole).
func Decode(report map[string]any) Spec {
	var s Spec
	if b, err := json.Marshal(report["spec"]); err == nil {
		_ = json.Unmarshal(b, &s)
	}
	s.Sort()
	return s
}

// SameState says whether a and b report the same state: everything but
// LastReportTime. Both must be sorted.
func SameState(a, b Spec) bool {
	a.LastReportTime, b.LastReportTime = metav1.Time{}, metav1.Time{}
	return equalJSON(a, b)
}
