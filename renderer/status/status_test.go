package status

import (
	"strings"
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
	desired := func() []Release {
		return []Release{{Release: "apps/web", Desired: "0.0.3"}, {Release: "ops/mon", Desired: "0.0.1"}}
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
			st := Target{Namespace: "apps", State: Unknown, Releases: desired()}
			compare(&st, tc.report, Options{MaxAge: DefaultMaxAge, Now: now})
			assert.Equal(t, tc.state, st.State, st.Message)
			assert.Equal(t, tc.code, ExitCode([]Target{st}))
		})
	}
	// A release that waits for its dependency (dependsOn) is on its way,
	// not failed, and says what it waits for.
	waits := rel("web", "0.0.3", "Degraded", "")
	waits.HelmConditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DependencyNotReady",
		Message: "dependency 'flux-system/edge-1-crds' is not ready"}}
	st := Target{Namespace: "apps", Releases: desired()}
	compare(&st, report(time.Minute, waits, rel("ops/mon", "0.0.1", "Ready", "")), Options{MaxAge: DefaultMaxAge, Now: now})
	assert.Equal(t, Progressing, st.State, st.Message)
	assert.Equal(t, 2, ExitCode([]Target{st}))
	assert.Equal(t, "apps/web: waiting for its dependencies: dependency 'flux-system/edge-1-crds' is not ready", st.Message)

	// A release whose source is not fetched yet (no Ready condition, moments
	// after a publish) is on its way; one whose source failed is not.
	pending := rel("web", "0.0.3", "Degraded", "")
	pending.HelmConditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "SourceNotReady",
		Message: "OCIRepository edge-1-web: no Ready condition yet"}}
	st = Target{Namespace: "apps", Releases: desired()}
	compare(&st, report(time.Minute, pending, rel("ops/mon", "0.0.1", "Ready", "")), Options{MaxAge: DefaultMaxAge, Now: now})
	assert.Equal(t, Progressing, st.State, st.Message)
	assert.Equal(t, "apps/web: waiting for its source: OCIRepository edge-1-web: no Ready condition yet", st.Message)
	pending.SourceConditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "OCIArtifactPullFailed", Message: "unauthorized"}}
	st = Target{Namespace: "apps", Releases: desired()}
	compare(&st, report(time.Minute, pending, rel("ops/mon", "0.0.1", "Ready", "")), Options{MaxAge: DefaultMaxAge, Now: now})
	assert.Equal(t, Failed, st.State, "a source that failed: %s", st.Message)

	st = Target{Namespace: "apps", Releases: desired()}
	compare(&st, report(time.Minute, rel("web", "0.0.3", "Failed", "Failed to install after 4 attempt(s)")), Options{MaxAge: DefaultMaxAge, Now: now})
	assert.Equal(t, "Failed to install after 4 attempt(s)", st.Releases[0].Message, "the failing condition's message")
	assert.Contains(t, st.Message, "apps/web: Failed: Failed to install after 4 attempt(s)")
}

// TestCompareSameNames: two Releases of one name from two namespaces are
// told apart: the one not on the cluster is not taken for the other.
func TestCompareSameNames(t *testing.T) {
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	st := Target{Namespace: "apps", Releases: []Release{{Release: "apps/web", Desired: "1.0.0"}, {Release: "ops/web", Desired: "1.0.0"}}}
	compare(&st, targetreport.Spec{LastReportTime: metav1.NewTime(now), Releases: []targetreport.Release{
		{Name: targetreport.ReleaseName("apps", "ops", "web"), Namespace: "flux-system", Phase: targetreport.Ready, Revision: "1.0.0"},
	}}, Options{MaxAge: DefaultMaxAge, Now: now})
	assert.Equal(t, Progressing, st.State)
	assert.Empty(t, st.Releases[0].Reported, "apps/web is not on the cluster")
	assert.Equal(t, "1.0.0", st.Releases[1].Reported)
}

// TestCompareDigests: helm-controller appends the first 12 hex digits of
// the artifact's manifest digest to the version it reports; the release is
// the one published when the version and that digest are, and a cluster
// that runs the published version from another artifact is told apart.
func TestCompareDigests(t *testing.T) {
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	const published = "sha256:68ee5879e98f0e5b8f1c5a0f7d9e3b2a1c4d6e8f0a2b4c6d8e0f1a3b5c7d9e1f"
	for _, tc := range []struct {
		name, desiredDigest, reported  string
		state, reportedDigest, message string
	}{
		{"the published artifact", published, "0.0.3+68ee5879e98f", Converged, "68ee5879e98f", ""},
		{"the published version from another artifact", published, "0.0.3+1234abcd5678", Progressing, "1234abcd5678",
			"apps/web: runs 0.0.3 from artifact sha256:1234abcd5678…, published is sha256:68ee5879e98f…: the version was re-tagged or rolled back; Flux pulls the published artifact at its next interval"},
		{"no suffix: the version alone", published, "0.0.3", Converged, "", ""},
		{"an older version from the published digest's prefix", published, "0.0.2+68ee5879e98f", Progressing, "", ""},
		{"a suffix of 8 hex digits", published, "0.0.3+68ee5879", Progressing, "",
			`apps/web: runs 0.0.3+68ee5879 with build metadata "68ee5879", not the 12 hex digits of an artifact digest helm-controller appends: which artifact it runs is unknown`},
		{"a suffix in upper case", published, "0.0.3+68EE5879E98F", Progressing, "",
			`apps/web: runs 0.0.3+68EE5879E98F with build metadata "68EE5879E98F", not the 12 hex digits of an artifact digest helm-controller appends: which artifact it runs is unknown`},
		{"not a version", published, "latest", Progressing, "", `apps/web: reports "latest", not a chart version`},
		{"the store lacks the chart: the version alone", "", "0.0.3+1234abcd5678", Converged, "1234abcd5678", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Target{Namespace: "apps", Releases: []Release{{Release: "apps/web", Desired: "0.0.3", DesiredDigest: tc.desiredDigest}}}
			compare(&st, targetreport.Spec{LastReportTime: metav1.NewTime(now), Releases: []targetreport.Release{
				{Name: "web", Namespace: "flux-system", Phase: targetreport.Ready, Revision: tc.reported}}}, Options{MaxAge: DefaultMaxAge, Now: now})
			assert.Equal(t, tc.state, st.State, st.Message)
			assert.Equal(t, tc.message, st.Message)
			rs := st.Releases[0]
			assert.Equal(t, tc.reported, rs.Reported, "REPORTED is what the cluster reported")
			assert.Equal(t, tc.reportedDigest, rs.ReportedDigest)
			assert.Equal(t, strings.TrimPrefix(tc.message, "apps/web: "), rs.Message, "the release's own message")
		})
	}
}

// TestFailingSaysWhy: after helm-controller rolled back a failed upgrade and
// ran out of retries, its Ready says only that the rollback succeeded (as
// recorded in internal/testkit/helmdriver/testdata/helm-controller/
// timeout.json): the message says that retries ran out and why the upgrade
// failed, then what Ready says.
func TestFailingSaysWhy(t *testing.T) {
	const (
		rolledBack = "Helm rollback to previous release demo/demo-app.v7 with chart app@0.1.0+89799849ddd4 succeeded"
		upgrade    = "Helm upgrade failed for release demo/demo-app with chart app@0.1.0+89799849ddd4: timeout waiting for: [Deployment/demo/demo-app status: 'InProgress']"
	)
	r := targetreport.Release{HelmConditions: []metav1.Condition{
		{Type: "Drifted", Status: metav1.ConditionFalse, Reason: "NoDriftDetected", Message: "No drift detected against the cluster state"},
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RollbackSucceeded", Message: rolledBack},
		{Type: "Released", Status: metav1.ConditionFalse, Reason: "UpgradeFailed", Message: upgrade},
		{Type: "Remediated", Status: metav1.ConditionTrue, Reason: "RollbackSucceeded", Message: rolledBack},
		{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "RetriesExceeded", Message: "Failed to upgrade after 4 attempt(s)"},
	}}
	assert.Equal(t, "Failed to upgrade after 4 attempt(s); "+upgrade+"; "+rolledBack, failing(r))

	// An install that failed and stalled: Ready is the failure itself.
	const install = "Helm install failed for release demo/demo-app with chart app@0.1.0+89799849ddd4: server-side apply failed"
	r.HelmConditions = []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "InstallFailed", Message: install},
		{Type: "Released", Status: metav1.ConditionFalse, Reason: "InstallFailed", Message: install},
		{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "RetriesExceeded", Message: "Failed to install after 4 attempt(s)"},
	}
	assert.Equal(t, "Failed to install after 4 attempt(s); "+install, failing(r))
}

// TestRetryingIsProgressing: between two attempts helm-controller writes
// Ready=False beside Reconciling=True (ProgressingWithRetry); the agent
// reports that Degraded, and solar status waits for the next attempt
// (Progressing, exit 2) instead of failing a rollout that is still tried.
func TestRetryingIsProgressing(t *testing.T) {
	const failed = "Helm install failed for release demo/demo-app with chart app@0.1.0+89799849ddd4: timeout waiting for: [Deployment/demo/demo-app status: 'InProgress']"
	r := targetreport.Release{Phase: targetreport.Degraded, Revision: "0.1.0", HelmConditions: []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "InstallFailed", Message: failed},
		{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "ProgressingWithRetry", Message: failed},
		{Type: "Released", Status: metav1.ConditionFalse, Reason: "InstallFailed", Message: failed},
	}}
	rs := Release{Release: "apps/demo", Desired: "0.1.0"}
	state, why := compareRelease(&rs, r)
	assert.Equal(t, Progressing, state)
	assert.Equal(t, "retrying: "+failed, why)

	// A source that cannot be read is Degraded without a retry coming soon.
	r.HelmConditions = nil
	r.SourceConditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "AuthenticationFailed", Message: "401"}}
	state, _ = compareRelease(&rs, r)
	assert.Equal(t, Failed, state)
}
