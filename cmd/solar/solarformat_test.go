package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/store"
)

const solarFormat = "../../testdata/solar-format"

// chartFiles reads the files of the chart at repository:version in a layout.
func chartFiles(t *testing.T, dir, repository, version string) map[string]string {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	repo, err := l.Repository(ctx, repository)
	require.NoError(t, err)
	desc, err := repo.Resolve(ctx, version)
	require.NoError(t, err)
	b, err := content.FetchAll(ctx, repo, desc)
	require.NoError(t, err)
	var m ocispec.Manifest
	require.NoError(t, json.Unmarshal(b, &m))
	archive, err := content.FetchAll(ctx, repo, m.Layers[0])
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		_, name, _ := strings.Cut(h.Name, "/")
		files[name] = string(b)
	}
}

// TestSolarFormat: objects as SolAr keeps them, with every field its API
// types define, vet and render; a kro entrypoint excludes only its Release.
func TestSolarFormat(t *testing.T) {
	code, stdout, stderr := solar(t, "vet", solarFormat)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Equal(t, `../../testdata/solar-format/components.yaml:90: spec.entrypoint.type: warning: Release fleet/cluster-addons for Target fleet/edge-a: entrypoint type "kro" of ComponentVersion catalog/cluster-addons-1-0-0 is not supported by solar yet
../../testdata/solar-format/components.yaml:90: spec.entrypoint.type: warning: Release fleet/cluster-addons for Target fleet/edge-b: entrypoint type "kro" of ComponentVersion catalog/cluster-addons-1-0-0 is not supported by solar yet
../../testdata/solar-format/components.yaml:101: spec.from[1].kind: warning: solar does not process RenderTask of group "solar.opendefense.cloud": this entry grants nothing here
18 objects valid, 3 warnings
`, stderr)

	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr = solar(t, "render", "-o", "json", "--out", out, solarFormat)
	require.Equal(t, 0, code, stderr)
	r := decodeReport(t, stdout)
	require.Len(t, r.Targets, 2)
	for _, tr := range r.Targets {
		require.Len(t, tr.Releases, 1, tr.Name)
		require.Len(t, tr.Excluded, 1, tr.Name)
		assert.Equal(t, "fleet/cluster-addons", tr.Excluded[0].Release)
		assert.Contains(t, tr.Excluded[0].Reason, `entrypoint type "kro" of ComponentVersion catalog/cluster-addons-1-0-0 is not supported by solar yet`)
	}
	assert.Contains(t, stdout, `"message": "Release fleet/cluster-addons for Target fleet/edge-a: entrypoint type \"kro\"`)

	// helm adds the appVersion and the valuesTemplate.
	podinfo := chartFiles(t, out, "fleet/fleet/release-podinfo", "0.0.1")
	assert.Contains(t, podinfo["Chart.yaml"], "appVersion: 6.9.0")
	assert.Contains(t, podinfo["values.yaml"], "url: oci://ghcr.io/stefanprodan/charts/podinfo")
	// Without helm: the resource's repository at its tag.
	previous := chartFiles(t, out, "fleet/fleet/release-podinfo-previous", "0.0.1")
	assert.Contains(t, previous["values.yaml"], "url: oci://ghcr.io/stefanprodan/charts/podinfo")
	assert.Contains(t, previous["values.yaml"], "tag: 6.8.0")
	assert.Contains(t, previous["Chart.yaml"], "appVersion: 6.8.0")

	if testing.Short() {
		t.Skip("-short: the CRD half runs a real etcd and kube-apiserver")
	}
	// Where solar ships a CRD (Target, TargetReport), the API server takes
	// the fixture's objects of that kind as they are.
	api := testenv.StartAPIServer(t)
	_, err := api.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	objs, problems, _ := load.Paths([]string{solarFormat}, load.Options{})
	require.Empty(t, problems)
	applied := 0
	for _, o := range objs {
		gvr, ok := map[string]schema.GroupVersionResource{"Target": kube.TargetGVR, "TargetReport": kube.TargetReportGVR}[o.Kind]
		if !ok {
			continue
		}
		_, err := dyn.Resource(gvr).Namespace(o.Namespace).Create(context.Background(),
			&unstructured.Unstructured{Object: o.Fields}, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err, "%s at %s", o.ID(), o.Pos())
		applied++
	}
	assert.Equal(t, 3, applied)
}
