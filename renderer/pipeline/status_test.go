package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// TestCompare: what solar published beside what the report says, into a
// Target's state and solar status --exit-code's code.
func TestCompare(t *testing.T) {
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	desired := func() []ReleaseStatus {
		return []ReleaseStatus{{Release: "apps/web", Desired: "0.0.3"}, {Release: "ops/mon", Desired: "0.0.1"}}
	}
	rel := func(name, version string, phase targetreport.Phase, msg string) targetreport.Release {
		r := targetreport.Release{Name: name, Namespace: "flux-system", Revision: version, Phase: phase}
		if msg != "" {
			r.HelmConditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RetriesExceeded", Message: msg}}
		}
		return r
	}
	report := func(age time.Duration, rs ...targetreport.Release) targetreport.Spec {
		return targetreport.Spec{LastReportTime: metav1.NewTime(now.Add(-age)), Releases: rs}
	}
	for _, tc := range []struct {
		name   string
		report targetreport.Spec
		state  string
		code   int
	}{
		{"converged", report(time.Minute, rel("web", "0.0.3", "Ready", ""), rel("ops/mon", "0.0.1", "Ready", "")), Converged, 0},
		{"an older version still live", report(time.Minute, rel("web", "0.0.2", "Ready", ""), rel("ops/mon", "0.0.1", "Ready", "")), Progressing, 2},
		{"not on the cluster yet", report(time.Minute, rel("web", "0.0.3", "Ready", "")), Progressing, 2},
		{"failed", report(time.Minute, rel("web", "0.0.3", "Failed", "Failed to install after 4 attempt(s)"), rel("ops/mon", "0.0.1", "Ready", "")), Failed, 1},
		{"stale", report(16*time.Minute, rel("web", "0.0.3", "Ready", ""), rel("ops/mon", "0.0.1", "Ready", "")), Stale, 1},
		{"no report yet", targetreport.Spec{}, Unknown, 1},
		{"dated in the future", report(-100*time.Hour, rel("web", "0.0.3", "Ready", ""), rel("ops/mon", "0.0.1", "Ready", "")), Unknown, 1},
		{"flux unreadable", targetreport.Spec{LastReportTime: metav1.NewTime(now), Preflight: targetreport.Preflight{Checks: []targetreport.Check{
			{Type: "FluxReadable", Status: metav1.ConditionFalse, Reason: "Forbidden", Message: "listing helmreleases: forbidden"}}}}, Unknown, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := TargetStatus{Namespace: "apps", State: Unknown, Releases: desired()}
			compare(&st, tc.report, StatusOptions{MaxAge: DefaultMaxAge, Now: now})
			assert.Equal(t, tc.state, st.State, st.Message)
			assert.Equal(t, tc.code, StatusExitCode([]TargetStatus{st}))
		})
	}
	st := TargetStatus{Namespace: "apps", Releases: desired()}
	compare(&st, report(time.Minute, rel("web", "0.0.3", "Failed", "Failed to install after 4 attempt(s)")), StatusOptions{MaxAge: DefaultMaxAge, Now: now})
	assert.Equal(t, "Failed to install after 4 attempt(s)", st.Releases[0].Message, "the failing condition's message")
	assert.Contains(t, st.Message, "apps/web: Failed: Failed to install after 4 attempt(s)")
}

// TestCompareSameNames: two Releases of one name from two namespaces are
// told apart: the one not on the cluster is not taken for the other.
func TestCompareSameNames(t *testing.T) {
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	st := TargetStatus{Namespace: "apps", Releases: []ReleaseStatus{{Release: "apps/web", Desired: "1.0.0"}, {Release: "ops/web", Desired: "1.0.0"}}}
	compare(&st, targetreport.Spec{LastReportTime: metav1.NewTime(now), Releases: []targetreport.Release{
		{Name: targetreport.ReleaseName("apps", "ops", "web"), Namespace: "flux-system", Phase: targetreport.Ready, Revision: "1.0.0"},
	}}, StatusOptions{MaxAge: DefaultMaxAge, Now: now})
	assert.Equal(t, Progressing, st.State)
	assert.Empty(t, st.Releases[0].Reported, "apps/web is not on the cluster")
	assert.Equal(t, "1.0.0", st.Releases[1].Reported)
}
