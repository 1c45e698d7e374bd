package chaintest

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/helmdriver"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// TestFluxChainToTheApplication publishes examples/ and lets the real
// source-controller and the Helm 4 SDK under helm-controller's rules
// (internal/testkit/helmdriver: 4 workers, kstatus waits, remediation) install every
// level of the chain on a cluster where workloads become ready (kwok), down to
// each application's Deployment, Available, for every Target. Then a changed
// Release upgrades exactly its Target's application, a Release a Target loses
// is uninstalled, unchanged input upgrades nothing, and the agent Flux
// installed reports with the kubeconfig the chain put on the cluster.
func TestFluxChainToTheApplication(t *testing.T) {
	start := time.Now()
	e := startChain(t, chainOptions{})
	ctx := context.Background()
	settle := func() []helmdriver.Event {
		t.Helper()
		events, err := e.settle(3 * time.Minute)
		require.NoError(t, err, "events so far: %v\nnot Ready: %v", events, e.notReadyHelmReleases())
		return events
	}

	// 1. Every level installs and is Ready, down to each application's own
	// Deployment, Available.
	events := settle()
	t.Logf("first install: %d Helm actions in %s (since the registries started)", len(events), time.Since(start).Round(time.Millisecond))
	for _, ev := range events {
		require.NotContains(t, ev.Action, "failed", "%s", ev)
	}
	assert.Empty(t, e.notReadyHelmReleases(), "every HelmRelease of every level is Ready")
	for _, tg := range e.targets {
		key := tg.ns + "/" + tg.name
		require.NotEmpty(t, e.reports[key].Releases, key)
		for _, rel := range e.reports[key].Releases {
			n := e.names[key][rel.Key]
			ok, why := e.available(n.TargetNamespace, n.AppRelease)
			require.True(t, ok, "%s: the Deployment %s/%s of %s is Available: %s", key, n.TargetNamespace, n.AppRelease, rel.Key, why)
			if rel.Key != "solar-agent" {
				require.NotNil(t, e.appValues(n), "%s: the application of %s is installed as %s in %s", key, rel.Key, n.AppRelease, n.TargetNamespace)
			}
		}
	}
	// The values path, end to end: Release.values and the rendered
	// valuesTemplate, both in the application's object.
	canary := e.appValues(e.names["alpha/edge-2"]["podinfo"])
	assert.Equal(t, float64(1), canary["replicaCount"], "Release.values")
	assert.Equal(t, map[string]any{"example.com/note": "{{ not a template }}"}, canary["podAnnotations"], "values are data")
	assert.Equal(t, map[string]any{"message": "edge-2"}, canary["ui"], "the valuesTemplate rendered for edge-2")
	assert.Equal(t, float64(2), e.appValues(e.names["alpha/edge-1"]["podinfo"])["replicaCount"])

	// 2. The agent loop: the agent chart Flux installed holds the kubeconfig
	// in a Secret; solar-agent reports with exactly that file.
	agentBin := buildAgent(t)
	agentReports(t, e, agentBin)

	// 2b. What the cluster runs, as the agent reports it (with the agent
	// chart's ServiceAccount on the cluster) and solar status compares it:
	// every release Ready at the version published.
	e.agentReport(agentBin, "alpha/edge-1")
	code, st := e.status("alpha/edge-1")
	require.Equal(t, 0, code, "%+v", st)
	assert.Equal(t, status.Converged, st.State)
	require.NotEmpty(t, st.Releases)
	for _, r := range st.Releases {
		// helm-controller's version: the published one and the first 12 hex
		// digits of the artifact it installed.
		require.Len(t, r.DesiredDigest, len("sha256:")+64, r.Release)
		assert.Equal(t, r.Desired+"+"+strings.TrimPrefix(r.DesiredDigest, "sha256:")[:12], r.Reported, r.Release)
		assert.Equal(t, "Ready", r.Phase, r.Release)
	}

	// No token in a custom resource: only Secrets hold it on the cluster.
	require.NotEmpty(t, testenv.AgentTokens(t, e.api, "alpha"), "the agents' tokens")
	for _, gvr := range []schema.GroupVersionResource{testenv.HelmReleaseGVR, testenv.OCIRepositoryGVR} {
		list, err := e.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, list.Items)
		for _, item := range list.Items {
			spec, err := json.Marshal(item.Object["spec"])
			require.NoError(t, err)
			for _, ns := range []string{"alpha", "beta"} {
				for _, tok := range testenv.AgentTokens(t, e.api, ns) {
					assert.False(t, strings.Contains(string(spec), tok), "%s %s/%s holds a token", item.GetKind(), item.GetNamespace(), item.GetName())
				}
			}
		}
	}

	// 3. A changed Release upgrades exactly its Target's application.
	e.edit("alpha/releases.yaml", "replicaCount: 2", "replicaCount: 3")
	e.publish()
	e.agentReport(agentBin, "alpha/edge-1")
	code, st = e.status("alpha/edge-1")
	assert.Equal(t, 2, code, "published, not yet on the cluster: %+v", st)
	assert.Equal(t, status.Progressing, st.State)
	edge1 := e.names["alpha/edge-1"]["podinfo"]
	assert.Equal(t, map[string]bool{
		"upgrade flux-alpha-edge-1/" + chain.Bootstrap:   true,
		"upgrade flux-alpha-edge-1/" + edge1.Source.Name: true,
		"upgrade podinfo/" + edge1.AppRelease:            true,
	}, actions(settle()), "the bootstrap, the release chart and the application of edge-1, nothing else")
	assert.Equal(t, float64(3), e.appValues(edge1)["replicaCount"])
	e.agentReport(agentBin, "alpha/edge-1")
	code, st = e.status("alpha/edge-1")
	assert.Equal(t, 0, code, "the new version Ready: %+v", st)
	// The agent stopped: its last report grows older than the maximum age.
	time.Sleep(2 * time.Second)
	code, st = e.status("alpha/edge-1", "--max-age", "1s")
	assert.Equal(t, 1, code)
	assert.Equal(t, status.Stale, st.State, st.Message)

	// 4. A Release a Target no longer gets (its Profile no longer matches)
	// is uninstalled at every level.
	e.edit("alpha/targets.yaml", "env: prod", "env: test")
	e.publish()
	metrics := e.names["alpha/edge-1"]["metrics"]
	assert.Equal(t, map[string]bool{
		"upgrade flux-alpha-edge-1/" + chain.Bootstrap:       true,
		"uninstall flux-alpha-edge-1/" + metrics.Source.Name: true,
		"uninstall monitoring/" + metrics.AppRelease:         true,
	}, actions(settle()))
	assert.Nil(t, e.appValues(metrics), "the application's object is gone")
	for _, n := range []string{metrics.Source.Name, metrics.App.Name} {
		_, err := e.dyn.Resource(testenv.HelmReleaseGVR).Namespace("flux-alpha-edge-1").Get(ctx, n, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "HelmRelease %s is gone: %v", n, err)
	}
	assert.NotNil(t, e.appValues(e.names["beta/plant-1"]["metrics"]), "plant-1 keeps its metrics")

	// 5. Unchanged input: nothing is upgraded anywhere.
	for key, tr := range e.publish() {
		assert.Equal(t, publish.Unchanged, tr.Action, key)
	}
	assert.Empty(t, settle(), "no Helm action on unchanged input")

	// 6. A Target deleted from the input: publish --prune gives its
	// bootstrap a version without releases, and Flux uninstalls them.
	testenv.RemovePlant2(t, e.examples)
	e.publish("--prune")
	plant2 := e.names["beta/plant-2"]["podinfo"]
	assert.Equal(t, map[string]bool{
		"upgrade flux-beta-plant-2/" + chain.Bootstrap:      true,
		"uninstall flux-beta-plant-2/" + plant2.Source.Name: true,
		"uninstall podinfo/" + plant2.AppRelease:            true,
	}, actions(settle()))
	assert.Nil(t, e.appValues(plant2), "the orphan's application is gone")
	t.Logf("the whole chain, four rounds: %s", time.Since(start).Round(time.Millisecond))
}

// agentReports runs solar-agent of alpha's Targets with the kubeconfig the
// agent chart put into its Secret: each advances its TargetReport.
func agentReports(t *testing.T, e *chainEnv, agentBin string) {
	ctx := context.Background()
	for _, key := range []string{"alpha/edge-1", "alpha/edge-2"} {
		kubeconfig, _ := e.agentKubeconfigs(key)
		ns, name, _ := strings.Cut(key, "/")
		lastReport := func() string {
			r, err := e.dyn.Resource(kube.TargetReportGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			v, _, _ := unstructured.NestedString(r.Object, "spec", "lastReportTime")
			return v
		}
		before := lastReport()
		out, err := exec.Command(agentBin, "--kubeconfig", kubeconfig, "--target", name, "--once").CombinedOutput()
		require.NoError(t, err, "solar-agent --once for %s: %s", key, out)
		after := lastReport()
		require.NotEmpty(t, after, key)
		assert.NotEqual(t, before, after, "%s: lastReportTime advanced", key)
	}
}

// TestHelmControllerDeadlocksWhenParentsWait is the chain as Solar rendered it
// before levels 1 and 2 stopped waiting: the first-contact HelmReleases and
// the bootstrap charts' HelmReleases wait for their children with kstatus.
// Four Targets' first-contact installs fill helm-controller's four workers
// while they wait for children that never get a worker; each install times
// out, remediation uninstalls it (and its children) and the cycle repeats
// until the retries are spent (on a real controller four attempts of 5
// minutes); the applications are not delivered meanwhile. The driver's default
// timeout is shortened from 5m to 20s for every level (Solar's charts set no
// spec.timeout), so that the test sees the cycle within 70 seconds.
func TestHelmControllerDeadlocksWhenParentsWait(t *testing.T) {
	waitOn := func(hr map[string]any) {
		spec := hr["spec"].(map[string]any)
		for _, action := range []string{"install", "upgrade"} {
			delete(spec[action].(map[string]any), "disableWait")
		}
		// The bootstrap chart's HelmReleases get the same policy as values.
		values, _ := spec["values"].(map[string]any)
		if values == nil {
			values = map[string]any{}
			spec["values"] = values
		}
		values["remediation"] = map[string]any{
			"install": map[string]any{"disableWait": false},
			"upgrade": map[string]any{"disableWait": false},
		}
	}
	e := startChain(t, chainOptions{driver: helmdriver.Options{Timeout: 20 * time.Second}, firstContact: waitOn})
	events, err := e.settle(70 * time.Second)
	require.Error(t, err, "the chain must not settle: %v", events)
	got := actions(events)
	for _, tg := range e.targets {
		bootstrap := tg.flux + "/" + chain.Bootstrap
		assert.True(t, got["install failed "+bootstrap], "%s: the first-contact install timed out: %v", tg.flux, events)
		assert.True(t, got["uninstall "+bootstrap], "%s: remediation uninstalled it: %v", tg.flux, events)
	}
	// A worker freed between two timed-out installs may reach an application
	// whose level-2 HelmRelease existed for that moment (one CI run saw
	// plant-1's metrics so); the chain as a whole never delivers.
	var reached, apps []string
	for _, tg := range e.targets {
		for key, n := range e.names[tg.ns+"/"+tg.name] {
			apps = append(apps, tg.ns+"/"+tg.name+" "+key)
			if ok, _ := e.available(n.TargetNamespace, n.AppRelease); ok {
				reached = append(reached, tg.ns+"/"+tg.name+" "+key)
			}
		}
	}
	assert.Less(t, len(reached), len(apps)/2, "most applications are never reached; reached: %v", reached)
	t.Logf("applications reached: %v; what the workers did: %v", reached, events)
}

// TestFailingApplicationLeavesItsParentsReady: an application whose new
// version never becomes ready (its pods fit no node) fails its upgrade at the
// timeout, is rolled back and retried until its retries are spent, and
// stalls; its parents, which do not wait for it, stay Ready, and every other
// application stays Available. (The driver's default timeout is 10s here.)
func TestFailingApplicationLeavesItsParentsReady(t *testing.T) {
	e := startChain(t, chainOptions{driver: helmdriver.Options{Timeout: 10 * time.Second}})
	events, err := e.settle(3 * time.Minute)
	require.NoError(t, err, "events: %v\nnot Ready: %v", events, e.notReadyHelmReleases())

	e.edit("alpha/releases.yaml", "replicaCount: 2", "replicaCount: 2\n    nodeSelector:\n      solar.example/pool: none")
	e.publish()
	events, err = e.settle(3 * time.Minute)
	edge1 := e.names["alpha/edge-1"]["podinfo"]
	appHR := "flux-alpha-edge-1/" + edge1.App.Name
	require.ErrorContains(t, err, "stalled: "+appHR, "events: %v", events)
	t.Logf("what the workers did: %v", events)
	got := actions(events)
	assert.True(t, got["upgrade failed podinfo/"+edge1.AppRelease], "the upgrade timed out: %v", events)
	assert.True(t, got["rollback podinfo/"+edge1.AppRelease], "remediation rolled it back: %v", events)
	notReady := e.notReadyHelmReleases()
	require.Len(t, notReady, 1, "only the application's HelmRelease is not Ready: %v", notReady)

	// The agent reports it Failed, with helm-controller's message.
	e.agentReport(buildAgent(t), "alpha/edge-1")
	code, st := e.status("alpha/edge-1")
	assert.Equal(t, 1, code)
	assert.Equal(t, status.Failed, st.State)
	hr, err := e.dyn.Resource(testenv.HelmReleaseGVR).Namespace("flux-alpha-edge-1").Get(context.Background(), edge1.App.Name, metav1.GetOptions{})
	require.NoError(t, err)
	var ready string
	for _, c := range targetreport.Conditions(hr.Object) {
		if c.Type == "Ready" {
			ready = c.Message
		}
	}
	require.NotEmpty(t, ready)
	found := false
	for _, r := range st.Releases {
		if r.Phase == "Failed" {
			found = true
			assert.True(t, strings.HasPrefix(r.Message, "Failed to upgrade after 4 attempt(s); Helm upgrade failed for release "), r.Message)
			assert.True(t, strings.HasSuffix(r.Message, "; "+ready), "helm-controller's messages, verbatim: %s", r.Message)
		}
	}
	assert.True(t, found, "a release Failed: %+v", st)
	assert.Contains(t, notReady[0], appHR)
	for _, tg := range e.targets {
		for key, n := range e.names[tg.ns+"/"+tg.name] {
			ok, why := e.available(n.TargetNamespace, n.AppRelease)
			assert.True(t, ok, "%s/%s %s: Available (the failed one rolled back): %s", tg.ns, tg.name, key, why)
		}
	}
}
