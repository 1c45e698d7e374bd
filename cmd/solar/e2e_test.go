package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
)

func download(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

// TestFluxPullsExactlyWhatSolarPublishes publishes examples/ to a registry
// over TLS with basic auth and lets the real Flux source-controller, on a real
// API server, pull what bootstrap-manifests points it at: byte for byte the
// pushed layers, and on unchanged input the very same revision (no upgrade).
// TestFluxChainToTheApplication installs what it pulls.
func TestFluxPullsExactlyWhatSolarPublishes(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	api := testenv.StartAPIServer(t)
	sc := testenv.StartSourceController(t, api)
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	f := &testenv.Flux{T: t, Dyn: dyn, NS: sc.Namespace}
	registry := reg.Host + "/solar"
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	pub := func() pipeline.Report {
		t.Helper()
		code, stdout, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--ca-file", reg.CAFile, "--registry", registry, "-o", "json", examples)
		require.Equal(t, 0, code, stderr)
		return decodeReport(t, stdout)
	}
	edge1 := func(r pipeline.Report) pipeline.TargetReport {
		for _, tr := range r.Targets {
			if tr.Name == "edge-1" {
				return tr
			}
		}
		t.Fatal("no edge-1 in the report")
		return pipeline.TargetReport{}
	}

	// 1. Publish.
	first := edge1(pub())

	// 2. What the cluster needs once.
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bootstrap-manifests", "edge-1", "-n", "alpha", "--registry", registry,
		"--username", reg.Username, "--password-stdin", "--ca-file", reg.CAFile}, strings.NewReader(reg.Password), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stderr.String(), "Target alpha/edge-1: its bootstrap chart is in "+registry+"/alpha/bootstrap-edge-1 (1 version)\n")
	require.Empty(t, f.Apply(stdout.String()))
	helmRelease := docs(t, stdout.String())["HelmRelease/"+chain.Bootstrap]

	// 3. Ready, and its artifact is the chart layer we pushed, byte for byte.
	artifact := f.Ready("solar-bootstrap", "")
	assert.Equal(t, first.Version+"@"+first.Digest, artifact["revision"], "Flux took the version and manifest solar pushed")
	pulled := t.TempDir()
	testenv.Helm(t, "pull", "oci://"+registry+"/"+first.Repository, "--version", first.Version,
		"--username", reg.Username, "--password", reg.Password, "--ca-file", reg.CAFile, "-d", pulled)
	layer, err := os.ReadFile(filepath.Join(pulled, "bootstrap-edge-1-"+first.Version+".tgz"))
	require.NoError(t, err)
	got := download(t, artifact["url"].(string))
	assert.True(t, bytes.Equal(layer, got), "source-controller's artifact is byte-identical to the pushed layer")

	// 4. Render the bootstrap chart as helm-controller would, with the
	// HelmRelease's values: every inner OCIRepository becomes Ready on its
	// release chart.
	values, err := yaml.Marshal(helmRelease["spec"].(map[string]any)["values"])
	require.NoError(t, err)
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(valuesFile, values, 0o644))
	chartFile := filepath.Join(t.TempDir(), "bootstrap.tgz")
	require.NoError(t, os.WriteFile(chartFile, got, 0o644))
	rendered := testenv.Helm(t, "template", chain.Bootstrap, chartFile, "-n", f.NS, "-f", valuesFile)
	require.Empty(t, f.Apply(rendered))
	for _, rel := range first.Releases {
		name := chain.For("edge-1", rel.Key, "").Source.Name
		a := f.Ready(name, "")
		assert.Equal(t, rel.Version+"@"+rel.Digest, a["revision"], "%s follows release chart %s", name, rel.Repository)
	}

	// 5. One Release changes: the bootstrap OCIRepository moves to the new version.
	releases := filepath.Join(examples, "alpha", "releases.yaml")
	b, err := os.ReadFile(releases)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(releases, bytes.Replace(b, []byte("replicaCount: 2"), []byte("replicaCount: 3"), 1), 0o644))
	second := edge1(pub())
	require.Equal(t, "0.0.2", second.Version)
	moved := f.Ready("solar-bootstrap", f.Reconcile("solar-bootstrap"))
	assert.Equal(t, second.Version+"@"+second.Digest, moved["revision"])

	// Unchanged input: the revision stays exactly the same, so helm-controller
	// would not upgrade.
	third := edge1(pub())
	assert.Equal(t, publish.Unchanged, third.Action)
	same := f.Ready("solar-bootstrap", f.Reconcile("solar-bootstrap"))
	assert.Equal(t, moved["revision"], same["revision"])
	assert.Equal(t, moved["digest"], same["digest"])
	t.Logf("bootstrap revisions: %v, then %v, then unchanged %v", artifact["revision"], moved["revision"], same["revision"])
}
