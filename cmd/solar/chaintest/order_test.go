package chaintest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/solar-pipeline/solar/internal/testkit/helmdriver"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// orderReleases are the releases of TestInstallOrder: on edge-1 an operator
// that registers its CRD (testdata/crds) and a widget, an object of that
// CRD (testdata/widget), that declares it depends on the operator; on edge-2
// the same pair, undeclared. Each pair has its own CRD group: the Targets
// share one API server.
const orderReleases = `apiVersion: solar.opendefense.cloud/v1alpha1
kind: Release
metadata: {name: crds-a, namespace: alpha}
spec:
  chart: {repository: %[1]s/solar-test/charts/crds, tag: 0.1.0}
  targetNamespace: order
  values: {group: a.widgets.example}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Release
metadata: {name: widget-ordered, namespace: alpha}
spec:
  chart: {repository: %[1]s/solar-test/charts/widget, tag: 0.1.0}
  targetNamespace: order
  values: {group: a.widgets.example}
  dependencies:
    - uniqueName: crds-a
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Release
metadata: {name: crds-b, namespace: alpha}
spec:
  chart: {repository: %[1]s/solar-test/charts/crds, tag: 0.1.0}
  targetNamespace: order
  values: {group: b.widgets.example}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Release
metadata: {name: widget-unordered, namespace: alpha}
spec:
  chart: {repository: %[1]s/solar-test/charts/widget, tag: 0.1.0}
  targetNamespace: order
  values: {group: b.widgets.example}
`

// orderBinding binds a Release to a Target of alpha.
const orderBinding = `---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: ReleaseBinding
metadata: {name: %[1]s-%[2]s, namespace: alpha}
spec:
  targetRef: {name: %[1]s}
  releaseRef: {name: %[2]s}
`

// TestInstallOrder is issue 54's done-when on the chain's parts: an
// application that creates an object of a CRD another release installs.
// The operator registers its CRD only once it runs, which the test lets it
// do (a node label) after it has seen both widgets' first attempts:
//   - declared (edge-1): the widget's HelmRelease carries dependsOn, waits
//     (Ready False, DependencyNotReady, naming the operator's HelmRelease)
//     and installs on its first attempt once the operator is Ready: one
//     install, no failure, no remediation;
//   - undeclared (edge-2): the widget installs at once and fails (no such
//     kind), again and again. Helm stored no release, so helm-controller
//     counts no failure against the retries (internal/reconcile/install.go,
//     "Return error if we did not store a release"): it never reaches
//     Stalled, it retries with controller-runtime's growing back-off
//     (Reconciling ProgressingWithRetry, Ready False InstallFailed), and
//     installs only at the first retry after the CRD appeared, which may
//     be many minutes later.
func TestInstallOrder(t *testing.T) {
	e := startChain(t, chainOptions{
		// A test need not wait helm-controller's 30s between two looks.
		driver: helmdriver.Options{RequeueDependency: 2 * time.Second},
		prepare: func(e *chainEnv) {
			testenv.PushChart(t, e.source, "testdata/crds", "solar-test/charts", "crds", "0.1.0")
			testenv.PushChart(t, e.source, "testdata/widget", "solar-test/charts", "widget", "0.1.0")
			doc := fmt.Sprintf(orderReleases, e.source.Host)
			for _, b := range [][2]string{{"edge-1", "crds-a"}, {"edge-1", "widget-ordered"}, {"edge-2", "crds-b"}, {"edge-2", "widget-unordered"}} {
				doc += fmt.Sprintf(orderBinding, b[0], b[1])
			}
			require.NoError(t, os.WriteFile(filepath.Join(e.examples, "alpha", "order.yaml"), []byte(doc), 0o644))
		},
	})
	ctx := context.Background()
	ordered, operatorA := chain.For("edge-1", "widget-ordered", "order"), chain.For("edge-1", "crds-a", "order")
	unordered := chain.For("edge-2", "widget-unordered", "order")
	waiting := fmt.Sprintf("dependency 'flux-alpha-edge-1/%s' is not ready", operatorA.App.Name)

	// The dependency reached the wire: the application HelmRelease of the
	// widget on edge-1 names the operator's, and waits for it.
	hr := e.waitHelmRelease("flux-alpha-edge-1", ordered.App.Name, func(c []metav1.Condition) bool {
		r := apimeta.FindStatusCondition(c, meta.ReadyCondition)
		return r != nil && r.Reason == "DependencyNotReady" && r.Message == waiting
	})
	deps, _, _ := unstructured.NestedSlice(hr, "spec", "dependsOn")
	assert.Equal(t, []any{map[string]any{"name": operatorA.App.Name}}, deps)
	ready := apimeta.FindStatusCondition(targetreport.Conditions(hr), meta.ReadyCondition)
	t.Logf("declared, while the operator is not ready: Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)

	// solar status, from the agent's report: the widget waits, which is
	// progress, not a failure, and says what it waits for.
	agentBin := buildAgent(t)
	e.waitHelmRelease("flux-alpha-edge-1", e.names["alpha/edge-1"]["solar-agent"].App.Name, func(c []metav1.Condition) bool {
		return apimeta.IsStatusConditionTrue(c, meta.ReadyCondition)
	})
	e.agentReport(agentBin, "alpha/edge-1")
	code, st := e.status("alpha/edge-1")
	assert.Equal(t, 2, code, "progressing: %+v", st)
	assert.Equal(t, status.Progressing, st.State)
	assert.Contains(t, st.Message, "alpha/widget-ordered: waiting for its dependencies: "+waiting)
	t.Logf("solar status: %s", st.Message)

	// Undeclared: failed, and failing again.
	hr = e.waitHelmRelease("flux-alpha-edge-2", unordered.App.Name, func(c []metav1.Condition) bool {
		r := apimeta.FindStatusCondition(c, meta.ReconcilingCondition)
		return r != nil && r.Reason == meta.ProgressingWithRetryReason
	})
	_, found, _ := unstructured.NestedSlice(hr, "spec", "dependsOn")
	assert.False(t, found, "no dependsOn where none is declared")
	ready = apimeta.FindStatusCondition(targetreport.Conditions(hr), meta.ReadyCondition)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, "InstallFailed", ready.Reason)
	assert.Contains(t, ready.Message, `no matches for kind "Widget"`)
	t.Logf("undeclared: Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
	time.Sleep(3 * time.Second)
	before, _ := e.drv.Settle(ctx, time.Second) // the events so far; nothing settles yet
	count := countActions(before)
	assert.GreaterOrEqual(t, count["install failed order/"+unordered.AppRelease], 2, "undeclared: failed, and retried: %v", before)
	assert.Zero(t, count["install order/"+unordered.AppRelease], "undeclared: not installed: %v", before)
	assert.Zero(t, count["install order/"+ordered.AppRelease]+count["install failed order/"+ordered.AppRelease], "declared: not tried while it waits: %v", before)

	// The operator may run now: it registers its CRD, and the widget that
	// waited for it installs, on its first attempt.
	_, err := e.api.Client.CoreV1().Nodes().Patch(ctx, testenv.ClusterNode, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"solar.example/operator":"on"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	e.waitHelmRelease("flux-alpha-edge-1", ordered.App.Name, func(c []metav1.Condition) bool {
		return apimeta.IsStatusConditionTrue(c, meta.ReadyCondition)
	})
	after, _ := e.drv.Settle(ctx, time.Second)
	count = countActions(append(before, after...))
	assert.Equal(t, 1, count["install order/"+ordered.AppRelease], "declared: installed once: %v", after)
	assert.Zero(t, count["install failed order/"+ordered.AppRelease]+count["uninstall order/"+ordered.AppRelease], "declared: no failure, no remediation: %v", after)
}

// countActions counts the events by "action namespace/release".
func countActions(events []helmdriver.Event) map[string]int {
	out := map[string]int{}
	for _, ev := range events {
		out[ev.Action+" "+ev.Release]++
	}
	return out
}

// waitHelmRelease polls a HelmRelease until its conditions satisfy ok
// (three minutes at most) and returns it.
func (e *chainEnv) waitHelmRelease(ns, name string, ok func([]metav1.Condition) bool) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var last []metav1.Condition
	for time.Now().Before(deadline) {
		hr, err := e.dyn.Resource(testenv.HelmReleaseGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = targetreport.Conditions(hr.Object)
			if ok(last) {
				return hr.Object
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	e.t.Fatalf("HelmRelease %s/%s: not there within 3m; conditions: %+v; not Ready: %v", ns, name, last, e.notReadyHelmReleases())
	return nil
}
