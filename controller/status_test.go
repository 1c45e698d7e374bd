package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// TestApply: the conditions each outcome leaves, Flux's way: Stalled on
// input only a change fixes, Reconciling while a retry may, Ready once
// published; a repeated outcome changes nothing.
func TestApply(t *testing.T) {
	published := &pipeline.TargetReport{Result: publish.Result{Repository: "alpha/bootstrap-edge-1", Version: "0.0.3", Digest: "sha256:" + strings.Repeat("a", 64)}}
	for _, tc := range []struct {
		name                       string
		out                        outcomes
		o                          targetOutcome
		ready                      metav1.ConditionStatus
		reason                     string
		reconciling, stalled, boot bool
	}{
		{"published", outcomes{}, targetOutcome{published: published}, metav1.ConditionTrue, meta.SucceededReason, false, false, true},
		{"invalid namespace", outcomes{problems: "a.yaml:3: spec: bad"}, targetOutcome{}, metav1.ConditionFalse, api.ReasonInvalidInput, false, true, false},
		{"invalid Target", outcomes{}, targetOutcome{problems: "no registry"}, metav1.ConditionFalse, api.ReasonInvalidInput, false, true, false},
		{"mint failed", outcomes{}, targetOutcome{credential: &credential.Credential{Reason: api.ReasonMintFailed, Message: "refused"}},
			metav1.ConditionFalse, api.ReasonMintFailed, true, false, false},
		{"registry down", outcomes{runErr: errors.New("connection refused")}, targetOutcome{}, metav1.ConditionFalse, api.ReasonPublishFailed, true, false, false},
		// Its bootstrap chart was published before another Target's push
		// failed: it is Ready at its new version, not marked failed.
		{"published, then the run failed", outcomes{runErr: errors.New("pushing bootstrap-edge-2: connection refused")},
			targetOutcome{published: published}, metav1.ConditionTrue, meta.SucceededReason, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &targetStatus{Conditions: []metav1.Condition{
				{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "x"},
				{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "x"},
			}}
			apply(st, tc.out, tc.o)
			ready := findCondition(st.Conditions, "Ready")
			if assert.NotNil(t, ready) {
				assert.Equal(t, tc.ready, ready.Status)
				assert.Equal(t, tc.reason, ready.Reason)
			}
			assert.Equal(t, tc.reconciling, findCondition(st.Conditions, "Reconciling") != nil, "Reconciling")
			assert.Equal(t, tc.stalled, findCondition(st.Conditions, "Stalled") != nil, "Stalled")
			assert.Equal(t, tc.boot, st.Bootstrap != nil, "bootstrap")
			again := st.DeepCopy()
			apply(again, tc.out, tc.o)
			assert.Equal(t, st, again, "the same outcome again changes nothing")
		})
	}
}

// TestErrorsOfIsBounded: a status holds at most maxProblems problems and
// says how many more there are.
func TestErrorsOfIsBounded(t *testing.T) {
	var l diag.List
	for i := range 25 {
		l.Errorf("a.yaml", i+1, "spec", "bad %d", i)
	}
	l.Warnf("a.yaml", 1, "spec", "only a warning")
	s := errorsOf(l)
	assert.Equal(t, maxProblems+1, strings.Count(s, "\n")+1)
	assert.Contains(t, s, "(and 15 more: solar vet shows them all)")
	assert.NotContains(t, s, "only a warning")
}

// TestRequeueBeforeTheTokenIsDue: a namespace runs again after the interval,
// or sooner when a token is due for renewal, but never within a minute (a
// token granted for less than RotateBefore is due at once); a credential
// not minted is retried.
func TestRequeueBeforeTheTokenIsDue(t *testing.T) {
	now := time.Now()
	planWith := func(renew time.Time, reason string) *pipeline.Plan {
		return &pipeline.Plan{Targets: []*pipeline.Target{{
			Resolution: &resolve.Resolution{Target: &model.Target{Meta: model.Meta{Name: "edge-1", Namespace: "alpha"}}},
			Credential: &credential.Credential{Reason: reason, Renew: renew},
		}}}
	}
	for _, tc := range []struct {
		renew time.Time
		want  time.Duration
	}{
		{now.Add(16 * time.Hour), 10 * time.Minute},
		{now.Add(5 * time.Minute), 5 * time.Minute},
		{now.Add(-time.Hour), time.Minute},
	} {
		got := outcome(planWith(tc.renew, api.ReasonIssued), nil, nil, 10*time.Minute).requeue
		assert.InDelta(t, tc.want.Seconds(), got.Seconds(), 1, "renew in %s", tc.renew.Sub(now).Round(time.Minute))
	}
	out := outcome(planWith(time.Time{}, api.ReasonMintFailed), nil, nil, 10*time.Minute)
	assert.ErrorContains(t, out.retry, "Target alpha/edge-1: the agent credential is not issued (MintFailed)")
}
