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
		{"converged", report(time.Minute, rel("web", "0.0.3", "Ready", ""), rel("mon", "0.0.1", "Ready", "")), Converged, 0},
		{"an older version still live", report(time.Minute, rel("web", "0.0.2", "Ready", ""), rel("mon", "0.0.1", "Ready", "")), Progressing, 2},
		{"not on the cluster yet", report(time.Minute, rel("web", "0.0.3", "Ready", "")), Progressing, 2},
		{"failed", report(time.Minute, rel("web", "0.0.3", "Failed", "Failed to install after 4 attempt(s)"), rel("mon", "0.0.1", "Ready", "")), Failed, 1},
		{"stale", report(11*time.Minute, rel("web", "0.0.3", "Ready", ""), rel("mon", "0.0.1", "Ready", "")), Stale, 1},
		{"no report yet", targetreport.Spec{}, Unknown, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := TargetStatus{State: Unknown, Releases: desired()}
			compare(&st, tc.report, StatusOptions{MaxAge: DefaultMaxAge, Now: now})
			assert.Equal(t, tc.state, st.State, st.Message)
			assert.Equal(t, tc.code, StatusExitCode([]TargetStatus{st}))
		})
	}
	st := TargetStatus{Releases: desired()}
	compare(&st, report(time.Minute, rel("web", "0.0.3", "Failed", "Failed to install after 4 attempt(s)")), StatusOptions{MaxAge: DefaultMaxAge, Now: now})
	assert.Equal(t, "Failed to install after 4 attempt(s)", st.Releases[0].Message, "the failing condition's message")
	assert.Contains(t, st.Message, "apps/web: Failed: Failed to install after 4 attempt(s)")
}
