package proctest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	solarapi "github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/storetest"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// stopAfter is how many Targets get their token before the API server stops.
const stopAfter = 5

// agentTargets is how many Targets of alpha get an agent credential in the
// tree of apiStopTree: edge-1, edge-2 and the ones it adds.
const agentTargets = 20

// apiStopTree copies examples/ with Targets edge-10… added to alpha, so that
// alpha has agentTargets Targets bound to the agent Release, and creates them
// all in the API server (their conditions are written there). It returns the
// tree and the names of alpha's Targets.
func apiStopTree(t *testing.T, api *testenv.APIServer) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	names := []string{"edge-1", "edge-2"}
	var b strings.Builder
	for i := 10; len(names) < agentTargets; i++ {
		name := fmt.Sprintf("edge-%d", i)
		names = append(names, name)
		fmt.Fprintf(&b, "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: %s\n  namespace: alpha\n  labels: {env: prod, region: eu}\nspec:\n  renderRegistryRef: {name: render, namespace: shared}\n", name)
	}
	targets := filepath.Join(dir, "examples", "alpha", "targets.yaml")
	f, err := os.OpenFile(targets, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(b.String())
	require.NoError(t, err)
	require.NoError(t, f.Close())

	api.CreateNamespaces(t, "alpha", "beta")
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	for _, name := range names {
		_, err := dyn.Resource(kube.TargetGVR).Namespace("alpha").Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "Target",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"renderRegistryRef": map[string]any{"name": "render", "namespace": "shared"}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return filepath.Join(dir, "examples"), names
}

// stopAtSecret stops the API server when the n-th token Secret is created in
// alpha: the sync is then in the middle of minting that Target's token, the
// Secret made and the token not yet in it. The returned channel is closed
// once the API server is stopped.
func stopAtSecret(t *testing.T, api *testenv.APIServer, n int) <-chan struct{} {
	t.Helper()
	w, err := api.Client.CoreV1().Secrets("alpha").Watch(context.Background(), metav1.ListOptions{LabelSelector: "solar.opendefense.cloud/agent-token-for"})
	require.NoError(t, err)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		seen := 0
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				if seen++; seen == n {
					api.Stop()
					return
				}
			}
		}
	}()
	t.Cleanup(w.Stop)
	return stopped
}

// splitByCredential names the Targets of alpha in a report whose credential
// is Issued, and those whose credential is MintFailed (beta has no agent).
func splitByCredential(t *testing.T, r pipeline.Report) (issued, failed []string) {
	t.Helper()
	for _, tr := range r.Targets {
		if tr.Namespace != "alpha" {
			continue
		}
		require.NotNil(t, tr.Credential, tr.Name)
		switch tr.Credential.Reason {
		case solarapi.ReasonIssued:
			issued = append(issued, tr.Name)
		case solarapi.ReasonMintFailed:
			failed = append(failed, tr.Name)
			// The request under way when the server died sees its
			// connection end; the next ones find nothing listening.
			assert.Regexp(t, `connection refused|connection reset|EOF`, tr.Credential.Message, "%s: says why", tr.Name)
		default:
			t.Errorf("%s: credential %s", tr.Name, tr.Credential.Reason)
		}
	}
	return issued, failed
}

// stoppedMidway checks that the stop fell in the middle of the Targets: the
// ones done before it Issued, the rest MintFailed. The SIGKILL lands a moment
// after the 6th token Secret is seen: the sync may finish that Target.
func stoppedMidway(t *testing.T, issued, failed []string) {
	t.Helper()
	assert.GreaterOrEqual(t, len(issued), stopAfter, "the Targets done before the stop are Issued")
	assert.NotEmpty(t, failed, "the Targets after the stop are MintFailed")
	assert.Equal(t, agentTargets, len(issued)+len(failed))
}

// credentialsHold checks, in the restarted API server, what a Target's
// credential promises: the condition on the Target is the one reported; a
// Target with an Issued credential has exactly one token Secret, which holds
// a token that reads the Target and not another one.
func credentialsHold(t *testing.T, api *testenv.APIServer, names, issued []string) {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	for _, name := range names {
		obj, err := dyn.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		var cond *metav1.Condition
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == solarapi.ConditionAgentCredentialReady {
				cond = &metav1.Condition{Type: m["type"].(string), Status: metav1.ConditionStatus(m["status"].(string)), Reason: m["reason"].(string)}
			}
		}
		l, err := api.Client.CoreV1().Secrets("alpha").List(ctx, metav1.ListOptions{LabelSelector: "solar.opendefense.cloud/agent-token-for=" + name})
		require.NoError(t, err)
		if !strings.Contains(strings.Join(issued, " ")+" ", name+" ") {
			assert.False(t, cond != nil && apimeta.IsStatusConditionTrue([]metav1.Condition{*cond}, solarapi.ConditionAgentCredentialReady),
				"%s: not issued, and its condition does not say so", name)
			continue
		}
		require.NotNil(t, cond, "%s: its condition is on the Target", name)
		assert.Equal(t, solarapi.ReasonIssued, cond.Reason, name)
		var secrets []string // names only: a failure never prints a token
		for _, sec := range l.Items {
			secrets = append(secrets, sec.Name)
		}
		require.Len(t, secrets, 1, "%s: one token Secret, no half-made one beside it", name)
		token := l.Items[0].Data["token"]
		require.NotEmpty(t, token, name)
		cfg := rest.AnonymousClientConfig(api.Config)
		cfg.BearerToken = string(token)
		agent, err := dynamic.NewForConfig(cfg)
		require.NoError(t, err)
		_, err = agent.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, name, metav1.GetOptions{})
		assert.NoError(t, err, "%s: its token reads its Target", name)
		other := names[0]
		if other == name {
			other = names[1]
		}
		_, err = agent.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, other, metav1.GetOptions{})
		assert.True(t, apierrors.IsForbidden(err), "%s: its token does not read %s: %v", name, other, err)
	}
}

// TestCredentialsThroughAPIServerStop stops (SIGKILL) the real API server and
// its etcd in the middle of minting the 6th Target's token, during
// credentials sync and during publish --kubeconfig. The Targets done before
// are Issued, in the report and on the Target; the others are MintFailed; the
// run exits 1; publish publishes the bootstrap charts of the Issued Targets
// only. After a restart, a re-run issues every Target, repairs the half-made
// token Secret, keeps the tokens already issued, and publishes the rest.
func TestCredentialsThroughAPIServerStop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: stops and restarts a real etcd and kube-apiserver")
	}
	bin := testenv.SolarBinary(t)
	t.Run("credentials sync", func(t *testing.T) {
		api := testenv.StartAPIServer(t)
		tree, names := apiStopTree(t, api)
		stopped := stopAtSecret(t, api, stopAfter+1)
		code, stdout, stderr := testenv.RunSolar(t, bin, "", "credentials", "sync", "-o", "json", "--kubeconfig", api.Kubeconfig, tree)
		<-stopped
		assert.Equal(t, 1, code, "a credential could not be minted: %s", stderr)
		issued, failed := splitByCredential(t, decodeReport(t, stdout))
		stoppedMidway(t, issued, failed)

		api.Restart(t)
		credentialsHold(t, api, names, issued)
		fingerprints := func() []string { // a failure never prints a token
			var out []string
			for _, tok := range testenv.AgentTokens(t, api, "alpha") {
				out = append(out, credential.Fingerprint([]byte(tok)))
			}
			return out
		}
		before := fingerprints()
		code, stdout, stderr = testenv.RunSolar(t, bin, "", "credentials", "sync", "-o", "json", "--kubeconfig", api.Kubeconfig, tree)
		require.Equal(t, 0, code, stderr)
		issued, failed = splitByCredential(t, decodeReport(t, stdout))
		assert.Len(t, issued, agentTargets)
		assert.Empty(t, failed)
		credentialsHold(t, api, names, issued)
		after, empty := fingerprints(), credential.Fingerprint(nil)
		for _, tok := range before {
			if tok != empty { // the half-made Secret's
				assert.Contains(t, after, tok, "a token issued before the stop is kept")
			}
		}
	})

	t.Run("publish", func(t *testing.T) {
		api := testenv.StartAPIServer(t)
		reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
		tree, names := apiStopTree(t, api)
		publish := func() (int, pipeline.Report, string) {
			code, stdout, stderr := testenv.RunSolar(t, bin, reg.Password, "publish", "-o", "json", "--kubeconfig", api.Kubeconfig, "--registry", reg.Host+"/solar",
				"--plain-http", "--username", reg.Username, "--password-stdin", tree)
			return code, decodeReport(t, stdout), stderr
		}
		stopped := stopAtSecret(t, api, stopAfter+1)
		code, r, stderr := publish()
		<-stopped
		assert.Equal(t, 1, code, stderr)
		// A Target whose credential failed keeps its previous bootstrap
		// chart: it is not in the report's Targets but in its problems.
		issued, _ := splitByCredential(t, r)
		var failed []string
		for _, p := range r.Problems {
			if _, after, ok := strings.Cut(p.Message, "Target alpha/"); ok && strings.Contains(after, "its agent credential is not issued (MintFailed") {
				failed = append(failed, strings.SplitN(after, ":", 2)[0])
			}
		}
		stoppedMidway(t, issued, failed)
		state := verifiedTags(t, bin, reg)
		for _, name := range names {
			_, ok := state["alpha/bootstrap-"+name+":0.0.1"]
			assert.Equal(t, strings.Contains(strings.Join(issued, " ")+" ", name+" "), ok,
				"%s: a bootstrap chart exactly when its credential was issued", name)
		}

		api.Restart(t)
		code, r, stderr = publish()
		require.Equal(t, 0, code, stderr)
		issued, _ = splitByCredential(t, r)
		assert.Len(t, issued, agentTargets)
		credentialsHold(t, api, names, issued)
		state = verifiedTags(t, bin, reg)
		for _, name := range names {
			assert.Contains(t, state, "alpha/bootstrap-"+name+":0.0.1", name)
		}
		code, r, stderr = publish()
		require.Equal(t, 0, code, stderr)
		for _, tr := range r.Targets {
			assert.Equal(t, "unchanged", tr.Action, "%s/%s: the run after converged", tr.Namespace, tr.Name)
		}
	})
}

// verifiedTags is every tag of the registry with its manifest digest, after
// solar verify passed on it.
func verifiedTags(t *testing.T, bin string, reg *testenv.Registry) map[string]string {
	t.Helper()
	state := storetest.RegistryTags(t, reg)
	code, stdout, stderr := testenv.RunSolar(t, bin, reg.Password, "verify", "--registry", reg.Host+"/solar", "--plain-http", "--username", reg.Username, "--password-stdin")
	require.Equal(t, 0, code, "verify:\n%s\n%s", stdout, stderr)
	return state
}
