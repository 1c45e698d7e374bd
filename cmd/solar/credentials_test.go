package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

func TestCredentialsSyncAndRender(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	s := testenv.StartAPIServer(t)
	ctx := context.Background()
	s.CreateNamespaces(t, "alpha", "beta")
	dyn, err := dynamic.NewForConfig(s.Config)
	require.NoError(t, err)
	_, err = dyn.Resource(kube.TargetGVR).Namespace("alpha").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "solar.opendefense.cloud/v1alpha1", "kind": "Target",
		"metadata": map[string]any{"name": "edge-1"},
		"spec":     map[string]any{"renderRegistryRef": map[string]any{"name": "render", "namespace": "shared"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	code, stdout, stderr := solar(t, "credentials", "sync", "-o", "json", "--kubeconfig", s.Kubeconfig, "../../examples")
	require.Equal(t, 0, code, stderr)
	r := decodeReport(t, stdout)
	got := map[string]string{}
	for _, tr := range r.Targets {
		got[tr.Namespace+"/"+tr.Name] = string(tr.Credential.Status) + " " + tr.Credential.Reason
	}
	assert.Equal(t, map[string]string{"alpha/edge-1": "True Issued", "alpha/edge-2": "True Issued"}, got,
		"the Targets bound to the agent Release, and only those")
	obj, err := dyn.Resource(kube.TargetGVR).Namespace("alpha").Get(ctx, "edge-1", metav1.GetOptions{})
	require.NoError(t, err)
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	require.Len(t, conds, 1, "the condition is on the Target that exists in the API server")

	again, _, _ := solar(t, "credentials", "sync", "-o", "json", "--kubeconfig", s.Kubeconfig, "../../examples")
	require.Equal(t, 0, again)

	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr = solar(t, "render", "-n", "alpha", "-o", "json", "--out", out, "--kubeconfig", s.Kubeconfig, "../../examples")
	require.Equal(t, 0, code, stderr)
	for _, tok := range testenv.AgentTokens(t, s, "alpha") {
		require.NotEmpty(t, tok)
		assert.False(t, strings.Contains(stdout+stderr, tok), "no token in the plan or logs")
	}
	var doc struct {
		Targets []map[string]json.RawMessage `json:"targets"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Len(t, doc.Targets, 2)
	var cred map[string]string
	require.NoError(t, json.Unmarshal(doc.Targets[0]["credential"], &cred))
	assert.Equal(t, "Issued", cred["reason"])
	assert.Contains(t, cred["message"], "<redacted>")

	rep := decodeReport(t, stdout)
	repos := map[string]string{}
	for _, tr := range rep.Targets {
		for _, rel := range tr.Releases {
			repos[tr.Name+" "+rel.Key] = rel.Repository
		}
	}
	assert.Equal(t, "alpha/alpha/edge-1/release-solar-agent", repos["edge-1 solar-agent"], "the agent chart is per Target")
	assert.Equal(t, "alpha/alpha/edge-2/release-solar-agent", repos["edge-2 solar-agent"])
	assert.Equal(t, "alpha/alpha/release-podinfo-canary", repos["edge-2 podinfo"], "other charts stay shared")

	// A second render with the same credentials is unchanged.
	code, stdout, _ = solar(t, "render", "-n", "alpha", "-o", "json", "--out", out, "--kubeconfig", s.Kubeconfig, "../../examples")
	require.Equal(t, 0, code)
	for _, tr := range decodeReport(t, stdout).Targets {
		assert.Equal(t, publish.Unchanged, tr.Action, tr.Name)
	}
	// The agent chart carries the kubeconfig for PipelineConfig's apiserverURL.
	l, err := store.OpenLayout(ctx, out, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	repo, err := l.Repository(ctx, "alpha/alpha/edge-1/release-solar-agent")
	require.NoError(t, err)
	desc, err := repo.Resolve(ctx, "0.0.1")
	require.NoError(t, err)
	manifest, err := content.FetchAll(ctx, repo, desc)
	require.NoError(t, err)
	var m ocispec.Manifest
	require.NoError(t, json.Unmarshal(manifest, &m))
	archive, err := content.FetchAll(ctx, repo, m.Layers[0])
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "agent.tgz")
	require.NoError(t, os.WriteFile(file, archive, 0o600))
	// Not through helmCLI: its failure message would print the token.
	// The names come from the bootstrap chart's values.
	rendered, err := exec.Command(testenv.Tool(t, "helm"), "template", "solar-bootstrap-solar-agent", file,
		"--set", "names.app.name=edge-1-solar-agent,names.values.name=edge-1-solar-agent-values,names.credential.name=edge-1-solar-agent-credential").Output()
	require.NoError(t, err)
	d := docs(t, string(rendered))
	secret := d["Secret/edge-1-solar-agent-credential"]
	require.NotNil(t, secret, "the kubeconfig goes to a Secret")
	values := secret["stringData"].(map[string]any)["values.yaml"].(string)
	assert.True(t, strings.Contains(values, "kubeconfig: |"), "the Secret's values carry a kubeconfig")
	assert.True(t, strings.Contains(values, "server: https://solar.example.com:6443"), "for the apiserverURL of the PipelineConfig")
	assert.True(t, strings.Contains(values, "target: edge-1"))
	hr := d["HelmRelease/edge-1-solar-agent"]["spec"].(map[string]any)
	assert.Equal(t, []any{map[string]any{"kind": "Secret", "name": "edge-1-solar-agent-credential", "valuesKey": "values.yaml"}}, hr["valuesFrom"])
	spec, err := json.Marshal(hr)
	require.NoError(t, err)
	for _, tok := range testenv.AgentTokens(t, s, "alpha") {
		assert.False(t, strings.Contains(string(spec), tok), "no token in the HelmRelease's spec")
	}

	// A new token shows in a diff as two fingerprints, never as the token.
	before := testenv.AgentTokens(t, s, "alpha")
	require.NoError(t, s.Client.CoreV1().Secrets("alpha").DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "solar.opendefense.cloud/agent-token-for=edge-1"}))
	code, _, stderr = solar(t, "credentials", "sync", "-n", "alpha", "--kubeconfig", s.Kubeconfig, "../../examples")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr = solar(t, "diff", "--files", "-n", "alpha", "--kubeconfig", s.Kubeconfig, "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "# alpha/alpha/edge-1/release-solar-agent 0.0.1 -> 0.0.2, reaches alpha/edge-1")
	assert.Regexp(t, `(?m)^-\s+token: <redacted sha256:[0-9a-f]{12}>$`, stdout)
	assert.Regexp(t, `(?m)^\+\s+token: <redacted sha256:[0-9a-f]{12}>$`, stdout)
	for _, tok := range append(before, testenv.AgentTokens(t, s, "alpha")...) {
		assert.False(t, strings.Contains(stdout+stderr, tok), "no token in the diff")
	}
}
