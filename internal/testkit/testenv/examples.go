package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// Plan resolves loaded objects with the default options.
func Plan(t testing.TB, objs []*load.Object) *resolve.Plan {
	t.Helper()
	s, err := model.NewSet(objs)
	require.NoError(t, err)
	p, err := resolve.Resolve(s, resolve.Options{})
	require.NoError(t, err)
	return p
}

// ExamplesPlan resolves examples/ (valid input: vet checks it elsewhere).
func ExamplesPlan(t testing.TB) *resolve.Plan {
	t.Helper()
	objs, problems, _ := load.Paths([]string{filepath.Join(Root(t), "examples")}, load.Options{Namespace: "default"})
	require.Empty(t, problems)
	return Plan(t, objs)
}

// CopyExamples copies the repository's examples/ into dir/examples.
func CopyExamples(t testing.TB, dir string) {
	t.Helper()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(filepath.Join(Root(t), "examples"))))
}

// RemovePlant2 removes Target beta/plant-2, and its RegistryBinding, from a
// copy of examples/: the Target gone from the input.
func RemovePlant2(t testing.TB, examples string) {
	t.Helper()
	for file, from := range map[string]string{
		"targets.yaml":  "  - apiVersion: solar.opendefense.cloud/v1alpha1\n    kind: Target\n    metadata:\n      name: plant-2",
		"releases.yaml": "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: RegistryBinding\nmetadata:\n  name: plant-2-ghcr",
	} {
		p := filepath.Join(examples, "beta", file)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		i := bytes.Index(b, []byte(from))
		require.Positive(t, i, file)
		require.NoError(t, os.WriteFile(p, b[:i], 0o644))
	}
}

// Helm runs the helm CLI with a configuration and cache of its own and
// returns its output; it fails the test when helm fails.
func Helm(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(Tool(t, "helm"), args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "helm %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// AgentTokens are every agent token in namespace ns of the API server, to
// check that none is printed.
func AgentTokens(t testing.TB, s *APIServer, ns string) []string {
	t.Helper()
	l, err := s.Client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: api.LabelAgentTokenFor})
	require.NoError(t, err)
	var out []string
	for _, sec := range l.Items {
		out = append(out, string(sec.Data["token"]))
	}
	return out
}
