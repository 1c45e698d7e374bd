package controller

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/store"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// TestControllerAdvancesARollout (issue 49, controller mode): with a
// Rollout of beta (one canary, the rest) in the API server, a change of the
// Release both Targets get reaches plant-1 only; plant-2 stays at its
// bootstrap chart, Ready=False RolloutHeld, until plant-1's TargetReport
// says its releases run what was published; then the controller, polling
// while the rollout waits on reports, admits plant-2.
func TestControllerAdvancesARollout(t *testing.T) {
	e, before := startRolloutController(t, "Halt")
	plant1, plant2 := [2]string{"beta", "plant-1"}, [2]string{"beta", "plant-2"}
	var canary bootstrap
	require.Eventually(t, func() bool {
		st, _ := e.targetStatusOf(t, "beta", "plant-2")
		held := findCondition(st.Conditions, "Ready")
		one, _ := e.targetStatusOf(t, "beta", "plant-1")
		if one.Bootstrap != nil {
			canary = *one.Bootstrap
		}
		return held != nil && held.Reason == api.ReasonRolloutHeld && canary.Version != before[plant1].Version
	}, 2*time.Minute, 200*time.Millisecond, "the canary admitted, plant-2 held")
	st, _ := e.targetStatusOf(t, "beta", "plant-2")
	assert.Equal(t, before[plant2], *st.Bootstrap, "a held Target's bootstrap chart stays")
	assert.Contains(t, findCondition(st.Conditions, "Ready").Message, "held by Rollout devices until wave rest starts")
	time.Sleep(3 * time.Second)
	st, _ = e.targetStatusOf(t, "beta", "plant-2")
	assert.Equal(t, api.ReasonRolloutHeld, findCondition(st.Conditions, "Ready").Reason, "nothing passes without a report")

	e.reportRunning(t, "plant-1", canary, targetreport.Ready, "")
	require.Eventually(t, func() bool {
		st, _ := e.targetStatusOf(t, "beta", "plant-2")
		c := findCondition(st.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue && st.Bootstrap.Version != before[plant2].Version
	}, 2*time.Minute, 200*time.Millisecond, "the canary reported Ready: the rest admitted")
}

// reportRunning writes Target name's TargetReport as its agent would once
// its releases are at the release charts its bootstrap chart b names, in
// phase (with message).
func (e *env) reportRunning(t *testing.T, name string, b bootstrap, phase targetreport.Phase, message string) {
	t.Helper()
	ctx := context.Background()
	raw, err := json.Marshal(e.runningSpec(t, b, phase, message))
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(raw, &obj))
	reports := e.dyn.Resource(kube.TargetReportGVR).Namespace("beta")
	u, err := reports.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		u = &unstructured.Unstructured{Object: map[string]any{"apiVersion": api.APIVersion, "kind": api.KindTargetReport,
			"metadata": map[string]any{"name": name, "namespace": "beta"}, "spec": obj}}
		_, err = reports.Create(ctx, u, metav1.CreateOptions{})
	} else {
		u.Object["spec"] = obj
		_, err = reports.Update(ctx, u, metav1.UpdateOptions{})
	}
	require.NoError(t, err)
}

// runningSpec is the TargetReport spec of a Target of beta whose releases
// are at the release charts its bootstrap chart b names, in phase (with
// message).
func (e *env) runningSpec(t *testing.T, b bootstrap, phase targetreport.Phase, message string) targetreport.Spec {
	t.Helper()
	ctx := context.Background()
	remote, err := store.NewRemote(e.registryOptions())
	require.NoError(t, err)
	repo, err := remote.Repository(ctx, b.Repository)
	require.NoError(t, err)
	refs, err := published.BootstrapRefs(ctx, repo, b.Version)
	require.NoError(t, err)
	spec := targetreport.Spec{LastReportTime: metav1.Now()}
	for _, ref := range refs {
		relNS, rel, _ := strings.Cut(ref.Release, "/")
		r := targetreport.Release{Name: targetreport.ReleaseName("beta", relNS, rel), Namespace: "flux-system", Phase: phase, Revision: ref.Version}
		if message != "" {
			r.HelmConditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "UpgradeFailed",
				Message: message, LastTransitionTime: metav1.Now()}}
		}
		spec.Releases = append(spec.Releases, r)
	}
	return spec
}

// changeUnderRollout creates Rollout beta/devices (one canary, the rest;
// onFailure as given) and changes the values of the Release both Targets
// of beta get.
func (e *env) changeUnderRollout(t *testing.T, onFailure string) {
	t.Helper()
	ctx := context.Background()
	rollout := map[string]any{"apiVersion": api.APIVersion, "kind": api.KindRollout,
		"metadata": map[string]any{"name": "devices", "namespace": "beta"},
		"spec": map[string]any{"waves": []any{
			map[string]any{"name": "canary", "count": int64(1)},
			map[string]any{"name": "rest"}},
			"onFailure": onFailure}}
	_, err := e.dyn.Resource(gvr(api.KindRollout)).Namespace("beta").Create(ctx, &unstructured.Unstructured{Object: rollout}, metav1.CreateOptions{})
	require.NoError(t, err)
	releases := e.dyn.Resource(gvr(api.KindRelease)).Namespace("beta")
	rel, err := releases.Get(ctx, "podinfo", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(rel.Object, map[string]any{"replicaCount": int64(2)}, "spec", "values"))
	_, err = releases.Update(ctx, rel, metav1.UpdateOptions{})
	require.NoError(t, err)

}

// TestControllerRollsBackAFailedCanary (issue 49, done-when 2 in controller
// mode): the canary's TargetReport says its release Failed; the
// controller's next pass rolls it back, publishing its previous bootstrap
// content at a new version, and plant-2 never gets the change.
func TestControllerRollsBackAFailedCanary(t *testing.T) {
	e, before := startRolloutController(t, "Rollback")
	plant1, plant2 := [2]string{"beta", "plant-1"}, [2]string{"beta", "plant-2"}
	var canary bootstrap
	require.Eventually(t, func() bool {
		one, _ := e.targetStatusOf(t, "beta", "plant-1")
		if one.Bootstrap != nil {
			canary = *one.Bootstrap
		}
		return canary.Version != before[plant1].Version
	}, 2*time.Minute, 200*time.Millisecond, "the canary admitted")

	e.reportRunning(t, "plant-1", canary, targetreport.Failed, "Failed to upgrade after 4 attempt(s)")
	var back bootstrap
	require.Eventually(t, func() bool {
		one, _ := e.targetStatusOf(t, "beta", "plant-1")
		back = *one.Bootstrap
		return back.Version != canary.Version
	}, 2*time.Minute, 200*time.Millisecond, "the canary rolled back")
	assert.NotEqual(t, canary.Digest, back.Digest, "other content than the canary's")
	st, _ := e.targetStatusOf(t, "beta", "plant-2")
	assert.Equal(t, before[plant2], *st.Bootstrap, "plant-2 never got the change")
	assert.Contains(t, findCondition(st.Conditions, "Ready").Message, "wave canary failed")
}

// startRolloutController runs a controller (polling rollouts every second)
// on the examples until every Target is Ready, then changes beta under a
// Rollout (changeUnderRollout): the env and the bootstrap charts before.
// edit, when given, changes the controller's options before it starts.
func startRolloutController(t *testing.T, onFailure string, edit ...func(*Options)) (*env, map[[2]string]bootstrap) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd, kube-apiserver and registry")
	}
	e := startEnv(t)
	opts := e.options(t)
	opts.RolloutPoll = time.Second
	for _, f := range edit {
		f(&opts)
	}
	start(t, opts)
	before := e.waitReady(t, 2*time.Minute)
	e.changeUnderRollout(t, onFailure)
	return e, before
}
