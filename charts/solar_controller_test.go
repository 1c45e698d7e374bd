package charts

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

var update = flag.Bool("update", false, "write config/controller's manifests from charts/solar-controller")

// controllerManifests are config/controller's files that the chart's
// templates render to: the install manifests are the chart, rendered into
// solar-system with its default values.
var controllerManifests = map[string]string{
	"rbac.yaml":       "2-rbac.yaml",
	"deployment.yaml": "3-deployment.yaml",
	"admission.yaml":  "4-admission.yaml",
}

// generatedHeader opens each file of config/controller the chart renders.
const generatedHeader = "# Rendered from charts/solar-controller into solar-system with its default\n" +
	"# values (make manifests); edit the chart, not this file.\n"

// renderController renders charts/solar-controller into namespace with values.
func renderController(t *testing.T, namespace string, values map[string]any) (map[string]string, error) {
	t.Helper()
	c, err := loader.Load("solar-controller")
	require.NoError(t, err)
	vals, err := commonutil.ToRenderValues(c, values, common.ReleaseOptions{Name: "solar-controller", Namespace: namespace, IsInstall: true}, nil)
	require.NoError(t, err)
	return engine.Render(c, vals)
}

// TestControllerManifestsAreTheChart: config/controller's RBAC, Deployment and
// admission policy are the controller chart rendered with its defaults, so the
// two ways to install the controller (kubectl apply -k, the chart through
// Flux or helm) install the same objects. go test -run
// TestControllerManifestsAreTheChart -update (make manifests) writes them.
func TestControllerManifestsAreTheChart(t *testing.T) {
	files, err := renderController(t, "solar-system", nil)
	require.NoError(t, err)
	for tpl, out := range controllerManifests {
		got := generatedHeader + strings.TrimLeft(files["solar-controller/templates/"+tpl], "\n")
		path := filepath.Join("..", "config", "controller", out)
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(want), got, "%s differs from the chart's %s: make manifests", path, tpl)
	}
}

// TestControllerChart lints the chart and renders it as make images
// publishes it: the image by digest, the release's namespace in every
// namespaced object, the ServiceAccount's name in the admission policy,
// extra flags after solar's own.
func TestControllerChart(t *testing.T) {
	l := lint.RunAll("solar-controller", nil, "solar")
	for _, m := range l.Messages {
		assert.Less(t, m.Severity, support.WarningSev, "helm lint: %s", m)
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	files, err := renderController(t, "solar", map[string]any{
		"image":    map[string]any{"repository": "127.0.0.1:5000/solar/solar", "digest": digest},
		"registry": "127.0.0.1:5000/charts", "pipelineConfigNamespace": "shared",
		"extraArgs": []any{"--plain-http"}, "replicas": 1,
	})
	require.NoError(t, err)
	deployment := files["solar-controller/templates/deployment.yaml"]
	assert.Contains(t, deployment, "image: 127.0.0.1:5000/solar/solar@"+digest+"\n")
	assert.Contains(t, deployment, "replicas: 1\n")
	assert.Contains(t, deployment, "            - --registry=127.0.0.1:5000/charts\n            - --cache-dir=/tmp/solar\n"+
		"            - --pipeline-config-namespace=shared\n            - --plain-http\n")
	for _, f := range files {
		assert.NotContains(t, f, "solar-system", "every object in the release's namespace")
	}
	assert.Contains(t, files["solar-controller/templates/admission.yaml"], "'system:serviceaccount:solar:solar-controller'")
}
