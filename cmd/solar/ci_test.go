package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// TestCIExample parses examples/ci/github-actions.yaml and runs its publish
// step, the script examples/ci/publish-namespace.sh, for each namespace of its
// matrix, with the solar it builds, against a real registry over TLS and a
// real API server.
func TestCIExample(t *testing.T) {
	needRegistry(t)
	b, err := os.ReadFile("../../examples/ci/github-actions.yaml")
	require.NoError(t, err)
	var wf struct {
		Jobs map[string]struct {
			Strategy struct {
				Matrix struct {
					Namespace []string `json:"namespace"`
				} `json:"matrix"`
			} `json:"strategy"`
			Steps []struct {
				Name string            `json:"name"`
				Uses string            `json:"uses"`
				Run  string            `json:"run"`
				With map[string]string `json:"with"`
				Env  map[string]string `json:"env"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &wf))
	job := wf.Jobs["publish"]
	require.Equal(t, []string{"alpha", "beta"}, job.Strategy.Matrix.Namespace)
	var uses []string
	var publishRun string
	var publishEnv map[string]string
	for _, s := range job.Steps {
		uses = append(uses, s.Uses)
		if s.Uses == "actions/cache@v4" {
			assert.Equal(t, "~/.cache/solar/tools", s.With["path"], "the tool folder of scripts/install-tools.sh is cached")
		}
		if s.Name == "publish" {
			publishRun, publishEnv = s.Run, s.Env
		}
	}
	assert.Contains(t, uses, "actions/setup-go@v5")
	require.Equal(t, "examples/ci/publish-namespace.sh", publishRun)
	for _, k := range []string{"NAMESPACE", "REGISTRY", "REGISTRY_USER", "REGISTRY_PASSWORD", "SOLAR_KUBECONFIG"} {
		assert.Contains(t, publishEnv, k)
	}

	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	api := testenv.StartAPIServer(t)
	api.CreateNamespaces(t, job.Strategy.Matrix.Namespace...)
	bin := filepath.Dir(testenv.SolarBinary(t))
	repo := t.TempDir()
	testenv.CopyExamples(t, repo)
	script, err := os.ReadFile("../../" + publishRun)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "examples/ci"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, publishRun), script, 0o755))

	for _, ns := range job.Strategy.Matrix.Namespace {
		cmd := exec.Command("bash", publishRun)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"NAMESPACE="+ns, "REGISTRY="+reg.Host+"/solar", "REGISTRY_USER="+reg.Username,
			"REGISTRY_PASSWORD="+reg.Password, "SOLAR_KUBECONFIG="+api.Kubeconfig, "CA_FILE="+reg.CAFile)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the %s job: %s", ns, out)
		assert.NotContains(t, string(out), reg.Password, "the password is never in the job log")
		b, err := os.ReadFile(filepath.Join(repo, "plan-"+ns+".json"))
		require.NoError(t, err)
		var r pipeline.Report
		require.NoError(t, json.Unmarshal(b, &r))
		require.NotEmpty(t, r.Targets, ns)
		for _, tr := range r.Targets {
			assert.Equal(t, ns, tr.Namespace)
			if tr.Credential != nil {
				assert.Equal(t, "Issued", tr.Credential.Reason, "%s: the job mints the agent credential", tr.Name)
			}
		}
	}
}
