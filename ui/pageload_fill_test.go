package ui

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// The fleet of BenchmarkPageLoad: n Targets, fleetPerNS per namespace
// (team-000, team-001, …), each Target's bootstrap chart naming the two
// release charts of its namespace (web and metrics), and a TargetReport
// that says both run the published artifact: every Target Converged, as a
// healthy fleet reads.
const (
	fleetPerNS    = 100
	fleetRegistry = "registry.example/solar"
	fleetWorkers  = 16
)

var fleetReleases = []string{"web", "metrics"}

func fleetNS(i int) string     { return fmt.Sprintf("team-%03d", i/fleetPerNS) }
func fleetTarget(i int) string { return fmt.Sprintf("edge-%05d", i) }

// fleetChart is a Helm chart's artifact: its Chart.yaml as the config and
// one layer holding Chart.yaml and values.yaml under the chart's folder.
func fleetChart(name, version string, values any) (*publish.Artifact, error) {
	chartYAML := fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", name, version)
	valuesYAML, err := yaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, body string }{{"Chart.yaml", chartYAML}, {"values.yaml", string(valuesYAML)}} {
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return &publish.Artifact{
		Config: publish.NewBlob("application/vnd.cncf.helm.config.v1+json", []byte(fmt.Sprintf(`{"apiVersion":"v2","name":%q,"version":%q}`, name, version))),
		Layers: []publish.Blob{publish.NewBlob("application/vnd.cncf.helm.chart.content.v1.tar+gzip", buf.Bytes())},
	}, nil
}

// fleetFill publishes the fleet's charts into a new layout at dir and
// creates its objects in the API server: the release charts first (the
// reports name their digests), then the bootstrap charts while the objects
// are created (the one on this process's cores, the other mostly on the
// API server's).
func fleetFill(tb testing.TB, a *testenv.APIServer, dir string, n int) {
	tb.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
	require.NoError(tb, err)
	defer l.Close()
	opts := publish.Options{Concurrency: 4, Log: slog.New(slog.DiscardHandler), Absent: map[string]bool{}}
	var jobs []publish.Job
	for ns := 0; ns < n; ns += fleetPerNS {
		for _, rel := range fleetReleases {
			repo := chain.ReleaseRepository(fleetNS(ns), fleetNS(ns), rel)
			opts.Absent[repo] = true
			jobs = append(jobs, publish.Job{Repository: repo, Pack: func(v string) (*publish.Artifact, error) {
				return fleetChart(rel, v, map[string]any{"replicas": 2})
			}})
		}
	}
	res, err := publish.Publish(ctx, l, jobs, opts)
	require.NoError(tb, err)
	digests := map[string]string{}
	for _, r := range res {
		digests[r.Repository] = r.Digest
	}
	var wg sync.WaitGroup
	published := make(chan error, 1)
	wg.Go(func() { published <- publishBootstraps(ctx, l, n, opts) })
	tb.Cleanup(wg.Wait) // before the layout's folder goes, should the creates fail
	createFleet(tb, a, n, digests)
	require.NoError(tb, <-published)
	require.NoError(tb, l.Save(ctx)) // the tags: every index.json
}

// publishBootstraps publishes every Target's bootstrap chart, naming the
// release charts of its namespace at 0.0.1 (the first version).
func publishBootstraps(ctx context.Context, l *store.Layout, n int, opts publish.Options) error {
	opts.Absent = map[string]bool{}
	var jobs []publish.Job
	for i := range n {
		ns, name := fleetNS(i), fleetTarget(i)
		var refs []map[string]string
		for _, rel := range fleetReleases {
			repo := chain.ReleaseRepository(ns, ns, rel)
			refs = append(refs, map[string]string{"url": chain.URL(fleetRegistry, repo), "version": "0.0.1", "release": ns + "/" + rel})
		}
		repo := chain.BootstrapRepository(ns, name)
		opts.Absent[repo] = true
		jobs = append(jobs, publish.Job{Repository: repo, Pack: func(v string) (*publish.Artifact, error) {
			return fleetChart(chain.BootstrapChart(name), v, map[string]any{"target": name, "releases": refs})
		}})
	}
	_, err := publish.Publish(ctx, l, jobs, opts)
	return err
}

// createFleet creates the namespaces, the Targets and their TargetReports
// in the API server, fleetWorkers at a time, as the admin with its client's
// rate limit raised (client-go's 5 per second would take an hour).
func createFleet(tb testing.TB, a *testenv.APIServer, n int, digests map[string]string) {
	tb.Helper()
	var names []string
	for ns := 0; ns < n; ns += fleetPerNS {
		names = append(names, fleetNS(ns))
	}
	a.CreateNamespaces(tb, names...)
	cfg := rest.CopyConfig(a.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(tb, err)
	at := time.Now().UTC().Format(time.RFC3339)
	jobs := make(chan int)
	errs := make(chan error, fleetWorkers)
	var wg sync.WaitGroup
	for range fleetWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := createTarget(dyn, i, at, digests); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case jobs <- i:
		case err := <-errs:
			close(jobs)
			wg.Wait()
			require.NoError(tb, err)
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	require.NoError(tb, <-errs)
}

// createTarget creates Target i and its report: both releases Ready at the
// published version and artifact (helm-controller's digest suffix).
func createTarget(dyn dynamic.Interface, i int, at string, digests map[string]string) error {
	ctx := context.Background()
	ns, name := fleetNS(i), fleetTarget(i)
	target := &unstructured.Unstructured{Object: map[string]any{"apiVersion": api.APIVersion, "kind": api.KindTarget,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"renderRegistryRef": map[string]any{"name": "edge"}}}}
	if _, err := dyn.Resource(kube.GVR(api.KindTarget)).Namespace(ns).Create(ctx, target, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Target %s/%s: %w", ns, name, err)
	}
	var releases []any
	for _, rel := range fleetReleases {
		d := digests[chain.ReleaseRepository(ns, ns, rel)]
		version := "0.0.1+" + d[len("sha256:"):len("sha256:")+12]
		chart := fmt.Sprintf("%s@%s", rel, version)
		releases = append(releases, map[string]any{"name": rel, "namespace": "flux-system", "phase": "Ready", "revision": version,
			"sourceConditions": []any{condition("Ready", "Succeeded", "stored artifact for digest '0.0.1@"+d+"'", at)},
			"helmConditions": []any{condition("Ready", "InstallSucceeded", "Helm install succeeded for release flux-system/"+rel+".v1 with chart "+chart, at),
				condition("Released", "InstallSucceeded", "Helm install succeeded for release flux-system/"+rel+".v1 with chart "+chart, at)}})
	}
	report := &unstructured.Unstructured{Object: map[string]any{"apiVersion": api.APIVersion, "kind": api.KindTargetReport,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"lastReportTime": at, "releases": releases,
			"preflight": map[string]any{"checks": []any{map[string]any{"type": "FluxReadable", "status": "True", "reason": "Readable"}}}}}}
	if _, err := dyn.Resource(kube.TargetReportGVR).Namespace(ns).Create(ctx, report, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating TargetReport %s/%s: %w", ns, name, err)
	}
	return nil
}

func condition(typ, reason, msg, at string) map[string]any {
	return map[string]any{"type": typ, "status": "True", "reason": reason, "message": msg, "lastTransitionTime": at}
}
