package chaintest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/helmdriver"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// chainTarget is one Target of examples/ as its cluster sees it.
type chainTarget struct {
	ns, name string
	// flux is its Flux namespace: every Target gets its own on the one API
	// server, as if each were a cluster of its own.
	flux string
}

// chainEnv is examples/ published to a registry, with the first-contact
// manifests of every Target applied on a cluster where workloads become
// ready (kwok), source-controller and the helm-controller stand-in running.
type chainEnv struct {
	t      *testing.T
	api    *testenv.APIServer
	dyn    dynamic.Interface
	drv    *helmdriver.Driver
	render *testenv.Registry
	// source holds the application charts.
	source   *testenv.Registry
	bin      string // the solar binary
	examples string
	targets  []chainTarget
	reports  map[string]pipeline.TargetReport
	// names: Target -> uniqueName -> the chain's names.
	names map[string]map[string]chain.Release
}

// chainOptions change what startChain sets up.
type chainOptions struct {
	driver helmdriver.Options
	// firstContact edits each first-contact HelmRelease before it is applied.
	firstContact func(hr map[string]any)
	// publish and bootstrap are extra arguments of the first publish and
	// of bootstrap-manifests (--signing-key, --verify-key).
	publish, bootstrap []string
	// prepare, when set, changes the environment (its examples) before the
	// first publish.
	prepare func(e *chainEnv)
}

func startChain(t *testing.T, opts chainOptions) *chainEnv {
	if testing.Short() {
		t.Skip("-short: runs registries, a Kubernetes cluster and source-controller")
	}
	ctx := context.Background()
	render := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	source := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	api := testenv.StartCluster(t)
	// The release charts' OCIRepositories name no CA Secret: source-controller
	// trusts both registries' CAs as its image's trust store would.
	testenv.StartSourceController(t, api, render.CAFile, source.CAFile)
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	drv, err := helmdriver.New(api.Kubeconfig, opts.driver)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	drv.Start(runCtx)
	e := &chainEnv{t: t, api: api, dyn: dyn, drv: drv, render: render, source: source, bin: testenv.SolarBinary(t)}

	// The application charts examples/ names, in the source registry; the
	// agent's own chart in the render registry, as the examples have it.
	for _, c := range []struct{ path, name, version string }{
		{"stefanprodan/charts", "podinfo", "6.7.0"},
		{"stefanprodan/charts", "podinfo", "6.8.0"},
		{"prometheus-community/charts", "prometheus-node-exporter", "4.47.0"},
	} {
		testenv.PushChart(t, source, "testdata/app", c.path, c.name, c.version)
	}
	testenv.PushChart(t, render, "../../../charts/solar-agent", "solar/charts", "solar-agent", "0.1.0")

	// examples/, pointed at these registries and this API server.
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	e.examples = filepath.Join(dir, "examples")
	for _, f := range []string{"shared/components.yaml", "alpha/releases.yaml", "shared/registries.yaml", "shared/pipeline.yaml"} {
		e.edit(f, "ghcr.io", source.Host, "registry.example.com", render.Host)
	}
	e.edit("shared/pipeline.yaml", "https://solar.example.com:6443", api.URL)
	if opts.prepare != nil {
		opts.prepare(e)
	}

	// The SolAr side: the Targets the agents report on.
	api.CreateNamespaces(t, "alpha", "beta")
	e.targets = []chainTarget{{"alpha", "edge-1", ""}, {"alpha", "edge-2", ""}, {"beta", "plant-1", ""}, {"beta", "plant-2", ""}}
	for i := range e.targets {
		tg := &e.targets[i]
		tg.flux = "flux-" + tg.ns + "-" + tg.name
		_, err := dyn.Resource(kube.TargetGVR).Namespace(tg.ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "Target",
			"metadata": map[string]any{"name": tg.name},
			"spec":     map[string]any{"renderRegistryRef": map[string]any{"name": "render", "namespace": "shared"}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	e.reports = e.publish(opts.publish...)
	require.Len(t, e.reports, len(e.targets))
	e.names = map[string]map[string]chain.Release{}
	for _, tp := range testenv.ExamplesPlan(t).Targets {
		key := tp.Namespace + "/" + tp.Name
		e.names[key] = map[string]chain.Release{}
		for _, sel := range tp.Releases {
			e.names[key][sel.UniqueName] = sel.Names
		}
	}

	// First contact on each Target's cluster: what an operator applies once.
	for _, tg := range e.targets {
		_, err := api.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tg.flux}}, metav1.CreateOptions{})
		require.NoError(t, err)
		for _, s := range []*corev1.Secret{testenv.PullSecret(source, tg.flux, "ghcr-pull"), testenv.PullSecret(render, tg.flux, "render-pull")} {
			_, err := api.Client.CoreV1().Secrets(tg.flux).Create(ctx, s, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		stream := e.bootstrapManifests(tg, opts.bootstrap...)
		if opts.firstContact != nil {
			stream = editHelmRelease(t, stream, opts.firstContact)
		}
		f := &testenv.Flux{T: t, Dyn: dyn, NS: tg.flux}
		require.Empty(t, f.Apply(stream))
	}
	return e
}

// bootstrapManifests is what solar bootstrap-manifests prints for tg.
func (e *chainEnv) bootstrapManifests(tg chainTarget, extra ...string) string {
	e.t.Helper()
	code, stream, stderr := e.solar(e.render.Password, append([]string{"bootstrap-manifests", tg.name, "-n", tg.ns, "--registry", e.registry(),
		"--flux-namespace", tg.flux, "--username", e.render.Username, "--password-stdin", "--ca-file", e.render.CAFile}, extra...)...)
	require.Equal(e.t, 0, code, stderr)
	return stream
}

func (e *chainEnv) registry() string { return e.render.Host + "/solar" }

// edit replaces pairs of strings in a file of the examples.
func (e *chainEnv) edit(file string, pairs ...string) {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.examples, file))
	require.NoError(e.t, err)
	s := string(b)
	for i := 0; i < len(pairs); i += 2 {
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	require.NotEqual(e.t, string(b), s, "%s changed", file)
	require.NoError(e.t, os.WriteFile(filepath.Join(e.examples, file), []byte(s), 0o644))
}

// publish runs solar publish of the examples and returns its report by Target.
func (e *chainEnv) publish(extra ...string) map[string]pipeline.TargetReport {
	e.t.Helper()
	report := e.publishReport(extra...)
	out := map[string]pipeline.TargetReport{}
	for _, tr := range report.Targets {
		out[tr.Namespace+"/"+tr.Name] = tr
	}
	return out
}

// publishReport runs solar publish of the examples and returns its report.
func (e *chainEnv) publishReport(extra ...string) pipeline.Report {
	e.t.Helper()
	code, stdout, stderr := e.solar(e.render.Password, append([]string{"publish", "--username", e.render.Username, "--password-stdin",
		"--ca-file", e.render.CAFile, "--registry", e.registry(), "--kubeconfig", e.api.Kubeconfig, "-o", "json", e.examples}, extra...)...)
	require.Equal(e.t, 0, code, stderr)
	var report pipeline.Report
	require.NoError(e.t, json.Unmarshal([]byte(stdout), &report), stdout)
	return report
}

// solar runs the solar binary with stdin; the password it is given never
// shows in what it prints.
func (e *chainEnv) solar(stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	code, stdout, stderr := testenv.RunSolar(e.t, e.bin, stdin, args...)
	assert.NotContains(e.t, stdout+stderr, stdin, "the password is never printed")
	return code, stdout, stderr
}

// settle makes the bootstrap sources look for a new version, as if their
// interval had elapsed (the inner ones follow their spec on their own), and
// waits until the helm-controller stand-in has nothing left to do.
func (e *chainEnv) settle(timeout time.Duration) ([]helmdriver.Event, error) {
	e.t.Helper()
	for _, tg := range e.targets {
		f := &testenv.Flux{T: e.t, Dyn: e.dyn, NS: tg.flux}
		f.Ready(chain.Bootstrap, f.Reconcile(chain.Bootstrap))
	}
	return e.drv.Settle(context.Background(), timeout)
}

// actions are the events' "action namespace/release", failed ones
// included, Helm tests left out: they follow every install and upgrade
// (spec.test.enable) and change no release.
func actions(events []helmdriver.Event) map[string]bool {
	out := map[string]bool{}
	for _, ev := range events {
		if ev.Action != "test" {
			out[ev.Action+" "+ev.Release] = true
		}
	}
	return out
}

// notReadyHelmReleases lists the HelmReleases that are not Ready for the
// generation they hold, with their Ready condition.
func (e *chainEnv) notReadyHelmReleases() []string {
	e.t.Helper()
	list, err := e.dyn.Resource(testenv.HelmReleaseGVR).List(context.Background(), metav1.ListOptions{})
	require.NoError(e.t, err)
	var out []string
	for _, hr := range list.Items {
		observed, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
		ready := "no Ready condition"
		conds, _, _ := unstructured.NestedSlice(hr.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == meta.ReadyCondition {
				ready = fmt.Sprintf("Ready=%v %v: %v", m["status"], m["reason"], m["message"])
				if m["status"] == string(metav1.ConditionTrue) && observed == hr.GetGeneration() {
					ready = ""
				}
			}
		}
		if ready != "" {
			out = append(out, fmt.Sprintf("%s/%s (observedGeneration %d of %d): %s", hr.GetNamespace(), hr.GetName(), observed, hr.GetGeneration(), ready))
		}
	}
	return out
}

// available says whether the Deployment exists and is Available.
func (e *chainEnv) available(namespace, name string) (bool, string) {
	d, err := e.api.Client.AppsV1().Deployments(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "absent"
	}
	require.NoError(e.t, err)
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue, string(c.Status) + " " + c.Reason
		}
	}
	return false, "no Available condition"
}

// appValues returns the values the application of a release was installed
// with, read from the ConfigMap the test chart makes; nil when it is absent.
func (e *chainEnv) appValues(names chain.Release) map[string]any {
	e.t.Helper()
	cm, err := e.api.Client.CoreV1().ConfigMaps(names.TargetNamespace).Get(context.Background(), names.AppRelease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(e.t, err)
	var v map[string]any
	require.NoError(e.t, json.Unmarshal([]byte(cm.Data["values.json"]), &v))
	return v
}

// editHelmRelease applies edit to every HelmRelease of a YAML stream.
func editHelmRelease(t *testing.T, stream string, edit func(map[string]any)) string {
	t.Helper()
	var docs []string
	for _, doc := range strings.Split(stream, "\n---") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		if obj["kind"] == "HelmRelease" {
			edit(obj)
			b, err := yaml.Marshal(obj)
			require.NoError(t, err)
			doc = "\n" + string(b)
		}
		docs = append(docs, doc)
	}
	return strings.Join(docs, "\n---")
}
