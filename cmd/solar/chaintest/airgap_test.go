package chaintest

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/solar-pipeline/solar/internal/testkit/helmdriver"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// airGap is examples/ on both sides of an air gap. The connected side:
// the source registry (the application charts, anonymous, plain HTTP) and
// the images registry (the image every application runs: podbin, by
// digest). The site: one registry (TLS, basic auth) that holds Solar's
// charts under /solar and everything else under /mirror, the only registry
// source-controller trusts and the only one the real node's containerd
// pulls from (its mirror of the images registry).
type airGap struct {
	*chainEnv
	source, images, site *testenv.Registry
	node                 *testenv.Node
	out                  string // the rendered layout
}

// TestAirGappedSite: examples/ rendered against the site's registry and
// exported with every application chart and image into one archive; the
// connected side's registries then stop (the site can reach nothing else),
// the archive is pushed to the site, and Flux on the site's cluster
// installs every level from the site alone, down to each application's
// Deployment, Available, its pod running on the real node from the image
// the archive carried (by digest).
func TestAirGappedSite(t *testing.T) {
	testenv.SkipUnlessNodeCan(t)
	a := startAirGap(t)

	// The connected side: render against the site's registry, export.
	begin := time.Now()
	a.reports = a.render()
	bundle := filepath.Join(t.TempDir(), "bundle.tar")
	a.export(bundle)
	exported := time.Since(begin)
	size, entries := archiveFigures(t, bundle)

	// The gap: nothing of the connected side answers any more.
	a.source.Stop()
	a.images.Stop()
	for _, host := range []string{a.source.Host, a.images.Host} {
		_, err := (&http.Client{Timeout: time.Second}).Get("http://" + host + "/v2/")
		require.Error(t, err, "%s no longer answers", host)
	}

	// The site: push the archive, apply first contact, let Flux settle.
	begin = time.Now()
	a.push(bundle)
	pushed := time.Since(begin)
	a.firstContact()
	begin = time.Now()
	events, err := a.settle(5 * time.Minute)
	require.NoError(t, err, "events so far: %v\nnot Ready: %v", events, a.notReadyHelmReleases())
	t.Logf("air gap: archive %d bytes, %d entries; render+export %s, push %s, settle %s (%d Helm actions)",
		size, entries, exported.Round(time.Millisecond), pushed.Round(time.Millisecond),
		time.Since(begin).Round(time.Millisecond), len(events))

	for _, ev := range events {
		require.NotContains(t, ev.Action, "failed", "%s", ev)
	}
	assert.Empty(t, a.notReadyHelmReleases(), "every HelmRelease of every level is Ready")
	a.assertFromSite()
	a.assertAppsRunFromSite()
}

func startAirGap(t *testing.T) *airGap {
	if testing.Short() {
		t.Skip("-short: runs registries, a Kubernetes cluster, source-controller and a real node")
	}
	// Portless: the site holds HOST/PATH as mirror/HOST/PATH, and a
	// repository path holds no port (testenv.Portless).
	a := &airGap{
		source: testenv.Portless(t, testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true}), "127.0.0.3"),
		images: testenv.Portless(t, testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true}), "127.0.0.2"),
		site:   testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true}),
	}
	api := testenv.StartCluster(t)
	testenv.StartSourceController(t, api, a.site.CAFile)
	a.node = testenv.StartNodeWith(t, api, a.images, testenv.NodeOptions{Mirrors: []testenv.Mirror{
		{Source: a.images.Host, Site: a.site, Path: "mirror/" + a.images.Host},
	}})
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	drv, err := helmdriver.New(api.Kubeconfig, helmdriver.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	drv.Start(ctx)
	a.chainEnv = &chainEnv{t: t, api: api, dyn: dyn, drv: drv, render: a.site, bin: testenv.SolarBinary(t)}

	for _, c := range []struct{ path, name, version string }{
		{"stefanprodan/charts", "podinfo", "6.7.0"},
		{"stefanprodan/charts", "podinfo", "6.8.0"},
		{"prometheus-community/charts", "prometheus-node-exporter", "4.47.0"},
	} {
		testenv.PushChart(t, a.source, "testdata/app", c.path, c.name, c.version)
	}
	a.prepareExamples()

	a.targets = []chainTarget{{"alpha", "edge-1", ""}, {"alpha", "edge-2", ""}, {"beta", "plant-1", ""}, {"beta", "plant-2", ""}}
	for i := range a.targets {
		a.targets[i].flux = "flux-" + a.targets[i].ns + "-" + a.targets[i].name
	}
	a.names = map[string]map[string]chain.Release{}
	for _, tp := range testenv.ExamplesPlan(t).Targets {
		key := tp.Namespace + "/" + tp.Name
		a.names[key] = map[string]chain.Release{}
		for _, sel := range tp.Releases {
			a.names[key][sel.UniqueName] = sel.Names
		}
	}
	return a
}

// prepareExamples copies examples/ and points it at these registries: the
// source registry for ghcr.io, the site's for registry.example.com, and the
// PipelineConfig's mirror at the site's Registry. Every application runs
// the pod image on the real node. The agent Release is left out: its pod
// would need the SolAr API server from the site (a TargetReport), which
// the site does not reach; it is rendered without credentials.
func (a *airGap) prepareExamples() {
	t := a.t
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	a.examples = filepath.Join(dir, "examples")
	for _, f := range []string{"shared/components.yaml", "alpha/releases.yaml", "shared/registries.yaml", "shared/pipeline.yaml"} {
		a.edit(f, "ghcr.io", a.source.Host, "registry.example.com", a.site.Host)
	}
	a.edit("shared/registries.yaml", "  hostname: "+a.source.Host+"\n", "  hostname: "+a.source.Host+"\n  plainHTTP: true\n")
	a.edit("shared/pipeline.yaml", "  registries:\n", "  registries:\n    allowInsecure: true\n"+
		"    mirror:\n      registryRef: {name: render, namespace: shared}\n      path: mirror\n")
	cutFrom(t, filepath.Join(a.examples, "alpha/releases.yaml"), "---\n# The agent Release")
	cutUntil(t, filepath.Join(a.examples, "alpha/profiles.yaml"), "---\n")

	values := "\n    image: " + a.node.PodImage + "\n    args: [app]\n    readinessProbe: {}\n" +
		"    nodeSelector: {kubernetes.io/hostname: " + a.node.Name + "}\n"
	a.edit("alpha/releases.yaml", "  values:\n", "  values:"+values,
		"  targetNamespace: monitoring\n", "  targetNamespace: monitoring\n  values:"+values)
	a.edit("beta/releases.yaml", "  targetNamespace: podinfo\n", "  targetNamespace: podinfo\n  values:"+values)
}

// cutFrom cuts file at the first from, which it must hold.
func cutFrom(t *testing.T, file, from string) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	i := strings.Index(string(b), from)
	require.Positive(t, i, "%s holds %q", file, from)
	require.NoError(t, os.WriteFile(file, b[:i], 0o644))
}

// cutUntil removes file's content up to and with the first until.
func cutUntil(t *testing.T, file, until string) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	i := strings.Index(string(b), until)
	require.Positive(t, i, "%s holds %q", file, until)
	require.NoError(t, os.WriteFile(file, b[i+len(until):], 0o644))
}

// render runs solar render against the site's registry (read, to number
// the versions) and returns its report by Target.
func (a *airGap) render() map[string]pipeline.TargetReport {
	a.t.Helper()
	a.out = filepath.Join(a.t.TempDir(), "out")
	code, stdout, stderr := a.solar(a.site.Password, "render", "--registry", a.registry(), "--username", a.site.Username,
		"--password-stdin", "--ca-file", a.site.CAFile, "--no-credentials", "--out", a.out, "-o", "json", a.examples)
	require.Equal(a.t, 0, code, stderr)
	var report pipeline.Report
	require.NoError(a.t, json.Unmarshal([]byte(stdout), &report), stdout)
	out := map[string]pipeline.TargetReport{}
	for _, tr := range report.Targets {
		out[tr.Namespace+"/"+tr.Name] = tr
	}
	require.Len(a.t, out, len(a.targets))
	return out
}

// export writes the layout and everything its Targets need to bundle.
func (a *airGap) export(bundle string) {
	a.t.Helper()
	code, stdout, stderr := testenv.RunSolar(a.t, a.bin, "", "export", a.out, a.examples, "--with-dependencies", "--out", bundle)
	if code != 0 && strings.Contains(stderr, "with-dependencies") {
		a.t.Skip("needs solar export --with-dependencies (h/deps): " + stderr)
	}
	require.Equal(a.t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	a.t.Logf("solar export:\n%s%s", stdout, stderr)
}

// push pushes bundle to the site's registry.
func (a *airGap) push(bundle string) {
	a.t.Helper()
	code, stdout, stderr := a.solar(a.site.Password, "push", bundle, "--registry", a.registry(), "--username", a.site.Username,
		"--password-stdin", "--ca-file", a.site.CAFile)
	require.Equal(a.t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	a.t.Logf("solar push:\n%s%s", stdout, stderr)
}

// firstContact applies what an operator applies once on each Target's
// cluster: the site's pull secret, then bootstrap-manifests.
func (a *airGap) firstContact() {
	a.t.Helper()
	ctx := context.Background()
	for _, tg := range a.targets {
		_, err := a.api.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tg.flux}}, metav1.CreateOptions{})
		require.NoError(a.t, err)
		_, err = a.api.Client.CoreV1().Secrets(tg.flux).Create(ctx, testenv.PullSecret(a.site, tg.flux, "render-pull"), metav1.CreateOptions{})
		require.NoError(a.t, err)
		f := &testenv.Flux{T: a.t, Dyn: a.dyn, NS: tg.flux}
		require.Empty(a.t, f.Apply(a.bootstrapManifests(tg)))
	}
}

// assertFromSite: every OCIRepository on the cluster, of every level,
// names the site's registry.
func (a *airGap) assertFromSite() {
	a.t.Helper()
	list, err := a.dyn.Resource(testenv.OCIRepositoryGVR).List(context.Background(), metav1.ListOptions{})
	require.NoError(a.t, err)
	require.NotEmpty(a.t, list.Items)
	mirrored := 0
	for _, item := range list.Items {
		url, _ := item.Object["spec"].(map[string]any)["url"].(string)
		assert.True(a.t, strings.HasPrefix(url, "oci://"+a.site.Host+"/"), "%s/%s: %s", item.GetNamespace(), item.GetName(), url)
		if strings.HasPrefix(url, "oci://"+a.site.Host+"/mirror/"+a.source.Host+"/") {
			mirrored++
		}
	}
	assert.Positive(a.t, mirrored, "the application charts come from the site's mirror")
}

// assertAppsRunFromSite: each application's Deployment is Available, its
// one pod Running and Ready on the real node from the exported image.
func (a *airGap) assertAppsRunFromSite() {
	a.t.Helper()
	ctx := context.Background()
	digest := a.node.PodImage[strings.LastIndex(a.node.PodImage, "@"):]
	apps := 0
	for _, tg := range a.targets {
		key := tg.ns + "/" + tg.name
		require.NotEmpty(a.t, a.reports[key].Releases, key)
		for _, rel := range a.reports[key].Releases {
			n := a.names[key][rel.Key]
			ok, why := a.available(n.TargetNamespace, n.AppRelease)
			require.True(a.t, ok, "%s: the Deployment %s/%s of %s is Available: %s", key, n.TargetNamespace, n.AppRelease, rel.Key, why)
			pods, err := a.api.Client.CoreV1().Pods(n.TargetNamespace).List(ctx, metav1.ListOptions{
				LabelSelector: "app.kubernetes.io/instance=" + n.AppRelease})
			require.NoError(a.t, err)
			require.Len(a.t, pods.Items, 1, "%s: the pod of %s", key, rel.Key)
			pod := pods.Items[0]
			assert.Equal(a.t, a.node.Name, pod.Spec.NodeName, "%s: %s runs on the real node", key, rel.Key)
			assert.Equal(a.t, corev1.PodRunning, pod.Status.Phase, "%s: %s", key, rel.Key)
			require.Len(a.t, pod.Status.ContainerStatuses, 1)
			st := pod.Status.ContainerStatuses[0]
			assert.True(a.t, st.Ready, "%s: %s ready: %+v", key, rel.Key, st.State)
			assert.NotNil(a.t, st.State.Running, "%s: %s", key, rel.Key)
			assert.True(a.t, strings.HasSuffix(st.ImageID, digest), "%s: %s ran %s", key, rel.Key, st.ImageID)
			apps++
		}
	}
	a.t.Logf("%d applications run on %s from %s", apps, a.node.Name, a.node.PodImage)
}

// archiveFigures are the archive's size and number of tar entries.
func archiveFigures(t *testing.T, file string) (int64, int) {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	info, err := f.Stat()
	require.NoError(t, err)
	entries := 0
	tr := tar.NewReader(f)
	for {
		_, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		entries++
	}
	return info.Size(), entries
}
