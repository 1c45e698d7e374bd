package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/solar-pipeline/solar/internal/helmdriver"
	"github.com/solar-pipeline/solar/internal/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// pushChart packages dir as the chart name at version with the real helm CLI
// and pushes it to oci://<reg.Host>/<path>/<name>.
func pushChart(t *testing.T, reg *testenv.Registry, dir, path, name, version string) {
	t.Helper()
	work := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(work, name), os.DirFS(dir)))
	chartYAML := filepath.Join(work, name, "Chart.yaml")
	if _, err := os.Stat(chartYAML); os.IsNotExist(err) {
		require.NoError(t, os.WriteFile(chartYAML, fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: %s\n", name, version), 0o644))
	}
	helmCLI(t, "package", filepath.Join(work, name), "-d", work)
	helmCLI(t, "push", filepath.Join(work, fmt.Sprintf("%s-%s.tgz", name, version)), "oci://"+reg.Host+"/"+path,
		"--username", reg.Username, "--password", reg.Password, "--ca-file", reg.CAFile)
}

// pullSecret is a dockerconfigjson Secret for reg.
func pullSecret(reg *testenv.Registry, namespace, name string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	config := fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q,"auth":%q}}}`, reg.Host, reg.Username, reg.Password, auth)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)},
	}
}

// chainTarget is one Target of examples/ as its cluster sees it.
type chainTarget struct {
	ns, name string
	// flux is its Flux namespace: every Target gets its own on the one API
	// server, as if each were a cluster of its own.
	flux string
}

// appValues returns the values the application of a release was installed
// with, read from the ConfigMap the test chart makes; nil when it is absent.
func appValues(t *testing.T, api *testenv.APIServer, names chain.Release) map[string]any {
	t.Helper()
	cm, err := api.Client.CoreV1().ConfigMaps(names.TargetNamespace).Get(context.Background(), names.AppRelease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Data["values.json"]), &v))
	return v
}

// TestFluxChainToTheApplication publishes examples/ and lets the real
// source-controller and the Helm SDK (internal/helmdriver, standing in for
// helm-controller) install every level of the chain on a real API server,
// down to each application's own object, for every Target. Then a changed
// Release upgrades exactly its Target's application, a Release a Target loses
// is uninstalled, unchanged input upgrades nothing, and the agent Flux
// installed reports with the kubeconfig the chain put on the cluster.
func TestFluxChainToTheApplication(t *testing.T) {
	needRegistry(t)
	ctx := context.Background()
	render := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	source := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	api := testenv.StartAPIServer(t)
	// The release charts' OCIRepositories name no CA Secret: source-controller
	// trusts both registries' CAs as its image's trust store would.
	testenv.StartSourceController(t, api, render.CAFile, source.CAFile)
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	drv, err := helmdriver.New(api.Kubeconfig)
	require.NoError(t, err)

	// The application charts examples/ names, in the source registry; the
	// agent's own chart in the render registry, as the examples have it.
	for _, c := range []struct{ path, name, version string }{
		{"stefanprodan/charts", "podinfo", "6.7.0"},
		{"stefanprodan/charts", "podinfo", "6.8.0"},
		{"prometheus-community/charts", "prometheus-node-exporter", "4.47.0"},
	} {
		pushChart(t, source, "testdata/app", c.path, c.name, c.version)
	}
	pushChart(t, render, "../../charts/solar-agent", "solar/charts", "solar-agent", "0.1.0")

	// examples/, pointed at these registries and this API server.
	dir := t.TempDir()
	copyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	edit := func(file string, pairs ...string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(examples, file))
		require.NoError(t, err)
		s := string(b)
		for i := 0; i < len(pairs); i += 2 {
			s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
		}
		require.NotEqual(t, string(b), s, "%s changed", file)
		require.NoError(t, os.WriteFile(filepath.Join(examples, file), []byte(s), 0o644))
	}
	for _, f := range []string{"shared/components.yaml", "alpha/releases.yaml", "shared/registries.yaml", "shared/pipeline.yaml"} {
		edit(f, "ghcr.io", source.Host, "registry.example.com", render.Host)
	}
	edit("shared/pipeline.yaml", "https://solar.example.com:6443", api.URL)

	// The SolAr side: the Targets the agents report on.
	api.CreateNamespaces(t, "alpha", "beta")
	targets := []chainTarget{{"alpha", "edge-1", ""}, {"alpha", "edge-2", ""}, {"beta", "plant-1", ""}, {"beta", "plant-2", ""}}
	for i := range targets {
		tg := &targets[i]
		tg.flux = "flux-" + tg.ns + "-" + tg.name
		_, err := dyn.Resource(credential.TargetGVR).Namespace(tg.ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "Target",
			"metadata": map[string]any{"name": tg.name},
			"spec":     map[string]any{"renderRegistryRef": map[string]any{"name": "render", "namespace": "shared"}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	registry := render.Host + "/solar"
	pub := func(extra ...string) map[string]pipeline.TargetReport {
		t.Helper()
		code, stdout, stderr := publishCLI(t, render, render.Password, append([]string{"--ca-file", render.CAFile, "--registry", registry,
			"--kubeconfig", api.Kubeconfig, "-o", "json", examples}, extra...)...)
		require.Equal(t, 0, code, stderr)
		out := map[string]pipeline.TargetReport{}
		for _, tr := range decodeReport(t, stdout).Targets {
			out[tr.Namespace+"/"+tr.Name] = tr
		}
		return out
	}
	start := time.Now()
	reports := pub()
	require.Len(t, reports, len(targets))

	// First contact on each Target's cluster: what an operator applies once.
	for _, tg := range targets {
		_, err := api.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tg.flux}}, metav1.CreateOptions{})
		require.NoError(t, err)
		for _, s := range []*corev1.Secret{pullSecret(source, tg.flux, "ghcr-pull"), pullSecret(render, tg.flux, "render-pull")} {
			_, err := api.Client.CoreV1().Secrets(tg.flux).Create(ctx, s, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		var stdout, stderr bytes.Buffer
		code := run(ctx, []string{"bootstrap-manifests", tg.name, "-n", tg.ns, "--registry", registry, "--flux-namespace", tg.flux,
			"--username", render.Username, "--password-stdin", "--ca-file", render.CAFile}, strings.NewReader(render.Password), &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		f := &flux{t: t, dyn: dyn, ns: tg.flux}
		require.Empty(t, f.apply(stdout.String()))
	}
	reconcile := func() []helmdriver.Event {
		t.Helper()
		// As if every interval had elapsed: the bootstrap sources look for a
		// new version (the inner ones follow their spec on their own).
		for _, tg := range targets {
			f := &flux{t: t, dyn: dyn, ns: tg.flux}
			f.ready(chain.Bootstrap, f.reconcile(chain.Bootstrap))
		}
		events, err := drv.Reconcile(ctx, 3*time.Minute)
		require.NoError(t, err, "events so far: %v", events)
		return events
	}

	// 1. Every level installs, down to each application's own object.
	events := reconcile()
	t.Logf("first install: %d Helm releases in %s", len(events), time.Since(start).Round(time.Millisecond))
	names := map[string]map[string]chain.Release{} // Target -> uniqueName -> names
	for _, tp := range testenv.ExamplesPlan(t).Targets {
		key := tp.Namespace + "/" + tp.Name
		names[key] = map[string]chain.Release{}
		for _, sel := range tp.Releases {
			names[key][sel.Key] = sel.Names
		}
	}
	for _, tg := range targets {
		key := tg.ns + "/" + tg.name
		require.NotEmpty(t, reports[key].Releases, key)
		for _, rel := range reports[key].Releases {
			n := names[key][rel.Key]
			if rel.Key == "solar-agent" { // the agent's own chart: its Deployment
				_, err := api.Client.AppsV1().Deployments(n.TargetNamespace).Get(ctx, n.AppRelease, metav1.GetOptions{})
				require.NoError(t, err, "%s: the agent is installed as %s in %s", key, n.AppRelease, n.TargetNamespace)
				continue
			}
			require.NotNil(t, appValues(t, api, n), "%s: the application of %s is installed as %s in %s", key, rel.Key, n.AppRelease, n.TargetNamespace)
		}
	}
	// The values path, end to end: Release.values and the rendered
	// valuesTemplate, both in the application's object.
	canary := appValues(t, api, names["alpha/edge-2"]["podinfo"])
	assert.Equal(t, float64(1), canary["replicaCount"], "Release.values")
	assert.Equal(t, map[string]any{"example.com/note": "{{ not a template }}"}, canary["podAnnotations"], "values are data")
	assert.Equal(t, map[string]any{"message": "edge-2"}, canary["ui"], "the valuesTemplate rendered for edge-2")
	assert.Equal(t, float64(2), appValues(t, api, names["alpha/edge-1"]["podinfo"])["replicaCount"])

	// 2. The agent loop: the agent chart Flux installed holds the kubeconfig
	// in a Secret; solar-agent reports with exactly that file.
	agentBin := filepath.Join(t.TempDir(), "solar-agent")
	build := exec.Command("go", "build", "-o", agentBin, "../solar-agent")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building solar-agent: %s", out)
	for _, key := range []string{"alpha/edge-1", "alpha/edge-2"} {
		n := names[key]["solar-agent"]
		secret, err := api.Client.CoreV1().Secrets(n.TargetNamespace).Get(ctx, n.AppRelease+"-kubeconfig", metav1.GetOptions{})
		require.NoError(t, err, "%s: the agent chart's kubeconfig Secret", key)
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, os.WriteFile(kubeconfig, secret.Data["kubeconfig"], 0o600))
		ns, name, _ := strings.Cut(key, "/")
		lastReport := func() string {
			r, err := dyn.Resource(credential.TargetReportGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			v, _, _ := unstructured.NestedString(r.Object, "spec", "lastReportTime")
			return v
		}
		before := lastReport()
		agent := exec.Command(agentBin, "--kubeconfig", kubeconfig, "--target", name, "--once")
		out, err := agent.CombinedOutput()
		require.NoError(t, err, "solar-agent --once for %s: %s", key, out)
		after := lastReport()
		require.NotEmpty(t, after, key)
		assert.NotEqual(t, before, after, "%s: lastReportTime advanced", key)
	}

	// No token in a custom resource: only Secrets hold it on the cluster.
	require.NotEmpty(t, tokens(t, api, "alpha"), "the agents' tokens")
	for _, gvr := range []schema.GroupVersionResource{helmReleaseGVR, ociRepositoryGVR} {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, list.Items)
		for _, item := range list.Items {
			spec, err := json.Marshal(item.Object["spec"])
			require.NoError(t, err)
			for _, ns := range []string{"alpha", "beta"} {
				for _, tok := range tokens(t, api, ns) {
					assert.False(t, strings.Contains(string(spec), tok), "%s %s/%s holds a token", item.GetKind(), item.GetNamespace(), item.GetName())
				}
			}
		}
	}

	// 3. A changed Release upgrades exactly its Target's application.
	edit("alpha/releases.yaml", "replicaCount: 2", "replicaCount: 3")
	pub()
	upgraded := map[string]bool{}
	for _, e := range reconcile() {
		upgraded[e.Action+" "+e.Release] = true
	}
	edge1 := names["alpha/edge-1"]["podinfo"]
	assert.Equal(t, map[string]bool{
		"upgrade flux-alpha-edge-1/" + chain.Bootstrap:   true,
		"upgrade flux-alpha-edge-1/" + edge1.Source.Name: true,
		"upgrade podinfo/" + edge1.AppRelease:            true,
	}, upgraded, "the bootstrap, the release chart and the application of edge-1, nothing else")
	assert.Equal(t, float64(3), appValues(t, api, edge1)["replicaCount"])

	// 4. A Release a Target no longer gets (its Profile no longer matches)
	// is uninstalled at every level.
	edit("alpha/targets.yaml", "env: prod", "env: test")
	pub()
	removed := map[string]bool{}
	for _, e := range reconcile() {
		removed[e.Action+" "+e.Release] = true
	}
	metrics := names["alpha/edge-1"]["metrics"]
	assert.Equal(t, map[string]bool{
		"upgrade flux-alpha-edge-1/" + chain.Bootstrap:       true,
		"uninstall flux-alpha-edge-1/" + metrics.Source.Name: true,
		"uninstall monitoring/" + metrics.AppRelease:         true,
	}, removed)
	assert.Nil(t, appValues(t, api, metrics), "the application's object is gone")
	for _, n := range []string{metrics.Source.Name, metrics.App.Name} {
		_, err := dyn.Resource(helmReleaseGVR).Namespace("flux-alpha-edge-1").Get(ctx, n, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "HelmRelease %s is gone: %v", n, err)
	}
	assert.NotNil(t, appValues(t, api, names["beta/plant-1"]["metrics"]), "plant-1 keeps its metrics")

	// 5. Unchanged input: nothing is upgraded anywhere.
	for key, tr := range pub() {
		assert.Equal(t, publish.Unchanged, tr.Action, key)
	}
	assert.Empty(t, reconcile(), "no Helm action on unchanged input")

	// 6. A Target deleted from the input: publish --prune gives its
	// bootstrap a version without releases, and Flux uninstalls them.
	removeTarget(t, examples)
	pub("--prune")
	pruned := map[string]bool{}
	for _, e := range reconcile() {
		pruned[e.Action+" "+e.Release] = true
	}
	plant2 := names["beta/plant-2"]["podinfo"]
	assert.Equal(t, map[string]bool{
		"upgrade flux-beta-plant-2/" + chain.Bootstrap:      true,
		"uninstall flux-beta-plant-2/" + plant2.Source.Name: true,
		"uninstall podinfo/" + plant2.AppRelease:            true,
	}, pruned)
	assert.Nil(t, appValues(t, api, plant2), "the orphan's application is gone")
	t.Logf("the whole chain, four rounds: %s", time.Since(start).Round(time.Millisecond))
}
