package objdiff

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// archive packs a chart's files (under the chart's folder) as Helm does.
func archive(t *testing.T, name string, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for path, text := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name + "/" + path, Mode: 0o644, Size: int64(len(text))}))
		_, err := tw.Write([]byte(text))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// parent is a chart of an OCIRepository and a HelmRelease of it, in the way
// Solar's charts make them, installing .Values.url into namespace "apps".
var parent = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: parent\nversion: 0.0.1\n",
	"values.yaml": "url: oci://apps.example.com/charts/web\n",
	"templates/x.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: web}
spec:
  url: {{ .Values.url }}
  ref: {tag: "1.0.0"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  chartRef: {kind: OCIRepository, name: web}
  targetNamespace: apps
  values: {replicas: 2}
`,
}

// TestWalkFollowsTheHelmRelease: the chart a HelmRelease names is rendered
// with its values as the release helm-controller names, in its target
// namespace; an application chart that does not render, or cannot be read,
// is a note, not an error.
func TestWalkFollowsTheHelmRelease(t *testing.T) {
	web := archive(t, "web", map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"values.yaml": "replicas: 1\n",
		"templates/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: {{ .Release.Name }}}\n" +
			"spec: {replicas: {{ .Values.replicas }}}\n",
	})
	w := &Walker{FluxNamespace: "flux-system", App: func(_ context.Context, ref Ref) ([]byte, error) {
		assert.Equal(t, "oci://apps.example.com/charts/web:1.0.0", ref.String())
		return web, nil
	}}
	objs, err := w.Walk(context.Background(), archive(t, "parent", parent))
	require.NoError(t, err)
	require.Len(t, objs, 3)
	d := objs[2]
	assert.Equal(t, "Deployment apps/apps-web", d.String(), "helm-controller's release name, the target namespace")
	assert.Equal(t, 2, d.Level)
	assert.Equal(t, map[string]any{"replicas": float64(2)}, d.body["spec"], "the HelmRelease's values over the chart's")
	assert.Empty(t, w.Notes)

	broken := archive(t, "web", map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"templates/d.yaml": `{{ required "a value the cluster holds" .Values.secret }}`,
	})
	for _, app := range []func(context.Context, Ref) ([]byte, error){
		func(context.Context, Ref) ([]byte, error) { return broken, nil },
		func(context.Context, Ref) ([]byte, error) { return nil, errors.New("no such host") },
	} {
		w := &Walker{FluxNamespace: "flux-system", App: app}
		objs, err := w.Walk(context.Background(), archive(t, "parent", parent))
		require.NoError(t, err)
		assert.Len(t, objs, 2, "the parent's objects")
		require.Len(t, w.Notes, 1)
		assert.Equal(t, "flux-system/web", w.Notes[0].Release)
		assert.NotEmpty(t, w.Notes[0].Reason)
	}
}
