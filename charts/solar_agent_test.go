package charts

import (
	"encoding/json"
	"os"
	"os/exec"
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
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestSolarAgentChart lints the agent's own chart and renders it with the
// values solar gives each Target: the kubeconfig goes to a Secret that the
// Deployment mounts, never into the Deployment itself.
func TestSolarAgentChart(t *testing.T) {
	values := map[string]any{"kubeconfig": "apiVersion: v1\nkind: Config\n# token: s3cret-token\n", "target": "edge-1"}
	l := lint.RunAll("solar-agent", values, "solar-system")
	for _, m := range l.Messages {
		assert.Less(t, m.Severity, support.WarningSev, "helm lint: %s", m)
	}

	// The helm CLI (v4), as users run it: lint and template pass.
	valuesFile := filepath.Join(t.TempDir(), "values.json")
	b, err := json.Marshal(values)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(valuesFile, b, 0o600))
	for _, args := range [][]string{
		{"lint", "solar-agent", "--namespace", "solar-system", "-f", valuesFile},
		{"template", "solar-system-edge-1-solar-agent", "solar-agent", "--namespace", "solar-system", "-f", valuesFile},
	} {
		out, err := exec.Command(testenv.Tool(t, "helm"), args...).CombinedOutput()
		require.NoError(t, err, "helm %s:\n%s", args[0], out)
		assert.NotContains(t, string(out), "[WARNING]", "helm %s", args[0])
	}

	c, err := loader.Load("solar-agent")
	require.NoError(t, err)
	render := func(values map[string]any) (map[string]string, error) {
		vals, err := commonutil.ToRenderValues(c, values, common.ReleaseOptions{Name: "solar-system-edge-1-solar-agent", Namespace: "solar-system", IsInstall: true}, nil)
		require.NoError(t, err)
		return engine.Render(c, vals)
	}
	files, err := render(values)
	require.NoError(t, err)
	objs := map[string]map[string]any{}
	for name, body := range files {
		if strings.TrimSpace(body) == "" || !strings.HasSuffix(name, ".yaml") {
			continue
		}
		var o map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(body), &o), name)
		objs[o["kind"].(string)] = o
	}
	require.Contains(t, objs, "Secret")
	require.Contains(t, objs, "Deployment")
	require.Contains(t, objs, "ServiceAccount")
	secretName := objs["Secret"]["metadata"].(map[string]any)["name"]
	assert.Equal(t, "solar-system-edge-1-solar-agent-kubeconfig", secretName)
	deployment, err := yaml.Marshal(objs["Deployment"])
	require.NoError(t, err)
	assert.NotContains(t, string(deployment), "s3cret-token", "the kubeconfig stays in the Secret")
	assert.Contains(t, string(deployment), "secretName: "+secretName.(string))
	assert.Contains(t, string(deployment), "--target=edge-1")
	assert.Contains(t, string(deployment), "readinessProbe")
	assert.Contains(t, string(deployment), "limits")

	// On its cluster the agent reads the Flux objects it reports, and
	// nothing else.
	require.Contains(t, objs, "ClusterRole")
	rules, err := json.Marshal(objs["ClusterRole"]["rules"])
	require.NoError(t, err)
	assert.JSONEq(t, `[{"apiGroups":["source.toolkit.fluxcd.io"],"resources":["ocirepositories"],"verbs":["get","list"]},
		{"apiGroups":["helm.toolkit.fluxcd.io"],"resources":["helmreleases"],"verbs":["get","list"]}]`, string(rules))
	binding := objs["ClusterRoleBinding"]
	assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": "solar-system-edge-1-solar-agent", "namespace": "solar-system"}}, binding["subjects"])

	assert.Contains(t, string(deployment), "image: registry.example.com/solar/solar-agent:0.1.0", "by default the tag, the chart's appVersion")
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	files, err = render(map[string]any{"kubeconfig": "x", "target": "edge-1",
		"image": map[string]any{"repository": "127.0.0.1:5000/solar/solar-agent", "digest": digest}})
	require.NoError(t, err)
	assert.Contains(t, files["solar-agent/templates/deployment.yaml"], `image: "127.0.0.1:5000/solar/solar-agent@`+digest+`"`, "a digest names the image")

	_, err = render(map[string]any{"target": "edge-1"})
	assert.ErrorContains(t, err, "kubeconfig is set by solar for each Target")
}
