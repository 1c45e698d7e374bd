package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// docs decodes a multi-document YAML stream by kind and name.
func docs(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if err == io.EOF {
			return got
		}
		require.NoError(t, err, out)
		meta := d["metadata"].(map[string]any)
		got[d["kind"].(string)+"/"+meta["name"].(string)] = d
	}
}

func TestBootstrapManifestsPlaceholder(t *testing.T) {
	code, stdout, stderr := solar(t, "bootstrap-manifests", "edge-1", "../../examples", "-n", "alpha", "--registry", "registry.example.com/solar/")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "Target alpha/edge-1: found in ../../examples\n", stderr[:strings.Index(stderr, "\n")+1])
	assert.Contains(t, stdout, "# PLACEHOLDER")
	d := docs(t, stdout)
	require.Len(t, d, 3)
	oci := d["OCIRepository/solar-bootstrap"]
	assert.Equal(t, "flux-system", oci["metadata"].(map[string]any)["namespace"])
	assert.Equal(t, map[string]any{
		"interval":      "10m0s",
		"url":           "oci://registry.example.com/solar/alpha/bootstrap-edge-1",
		"ref":           map[string]any{"semver": ">=0.0.0"},
		"layerSelector": map[string]any{"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip", "operation": "copy"},
		"secretRef":     map[string]any{"name": "solar-bootstrap-pull"},
	}, oci["spec"])
	hr := d["HelmRelease/solar-bootstrap"]["spec"].(map[string]any)
	assert.Equal(t, map[string]any{"kind": "OCIRepository", "name": "solar-bootstrap"}, hr["chartRef"])
	// Level 1 installs only Flux objects: it must not hold a helm-controller
	// worker waiting for them (chart.ChainPolicy).
	assert.Equal(t, map[string]any{"disableWait": true, "remediation": map[string]any{"retries": 3}}, hr["install"])
	assert.Equal(t, map[string]any{"disableWait": true, "remediation": map[string]any{"retries": 3}}, hr["upgrade"])
	assert.Equal(t, map[string]any{"enable": true}, hr["test"])
	assert.Equal(t, map[string]any{"mode": "enabled"}, hr["driftDetection"])
	secret := d["Secret/solar-bootstrap-pull"]
	assert.Equal(t, "kubernetes.io/dockerconfigjson", secret["type"])
	raw, err := base64.StdEncoding.DecodeString(secret["data"].(map[string]any)[".dockerconfigjson"].(string))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"registry.example.com"`)
	assert.Contains(t, string(raw), "REPLACE-WITH")
}

// TestBootstrapManifestsAuth: the pull Secret printed is a working docker
// config: publish with it as DOCKER_CONFIG, then pull what the OCIRepository
// names with helm.
func TestBootstrapManifestsAuth(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	var stdout, stderr bytes.Buffer
	// Without PATHs, the registry must hold the Target's bootstrap chart:
	// nothing is published yet.
	code := run(context.Background(), []string{"bootstrap-manifests", "plant-1", "-n", "beta", "--registry", reg.Host,
		"--username", reg.Username, "--password-stdin", "--ca-file", reg.CAFile}, strings.NewReader(reg.Password), &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout.String())
	assert.Contains(t, stderr.String(), "no Target beta/plant-1: "+reg.Host+"/beta/bootstrap-plant-1 holds no bootstrap chart (publish it first, check TARGET and -n); or pass the PATHs")
	stdout.Reset()
	code = run(context.Background(), []string{"bootstrap-manifests", "plant-1", "../../examples", "-n", "beta", "--registry", reg.Host,
		"--username", reg.Username, "--password-stdin", "--ca-file", reg.CAFile}, strings.NewReader(reg.Password), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.NotContains(t, stdout.String(), "PLACEHOLDER")
	d := docs(t, stdout.String())
	require.Len(t, d, 4)
	oci := d["OCIRepository/solar-bootstrap"]["spec"].(map[string]any)
	assert.Equal(t, map[string]any{"name": "solar-bootstrap-ca"}, oci["certSecretRef"])
	assert.Equal(t, map[string]any{"registry": map[string]any{"pullSecret": "solar-bootstrap-pull", "certSecret": "solar-bootstrap-ca"}},
		d["HelmRelease/solar-bootstrap"]["spec"].(map[string]any)["values"], "the chart's own OCIRepositories use the same Secrets")
	ca, err := base64.StdEncoding.DecodeString(d["Secret/solar-bootstrap-ca"]["data"].(map[string]any)["ca.crt"].(string))
	require.NoError(t, err)
	want, err := os.ReadFile(reg.CAFile)
	require.NoError(t, err)
	assert.Equal(t, want, ca)

	config, err := base64.StdEncoding.DecodeString(d["Secret/solar-bootstrap-pull"]["data"].(map[string]any)[".dockerconfigjson"].(string))
	require.NoError(t, err)
	dockerConfig := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dockerConfig, "config.json"), config, 0o600))
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	code, out, errOut := solar(t, "publish", "--no-credentials", "-n", "beta", "--registry", reg.Host, "--ca-file", reg.CAFile, "../../examples")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out+errOut, reg.Password)

	url := oci["url"].(string)
	assert.Equal(t, "oci://"+reg.Host+"/beta/bootstrap-plant-1", url)
	pulled := testenv.Helm(t, "pull", url, "--version", ">=0.0.0", "--ca-file", reg.CAFile,
		"--username", reg.Username, "--password", reg.Password, "-d", t.TempDir())
	assert.Contains(t, pulled, "bootstrap-plant-1:0.0.1")

	// Without -n, the Target is looked for in namespace default; the
	// registry's catalog says where it is.
	code, _, errOut = solar(t, "bootstrap-manifests", "plant-1", "--registry", reg.Host, "--ca-file", reg.CAFile)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no Target default/plant-1: "+reg.Host+"/default/bootstrap-plant-1 holds no bootstrap chart; plant-1 exists in namespace beta (pass -n beta)\n")
}

// TestBootstrapManifestsServerDryRun: every object printed is valid for the
// real API server with the Flux CRDs, as kubectl apply --dry-run=server checks.
func TestBootstrapManifestsServerDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	api := testenv.StartAPIServer(t)
	testenv.InstallFluxCRDs(t, api)
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600))
	for name, args := range map[string][]string{
		"placeholder": {"--registry", "registry.example.com/solar"},
		"auth, CA":    {"--registry", "127.0.0.1:5000", "--username", "edge-1", "--password-stdin", "--ca-file", ca, "--flux-namespace", "default"},
		"plain HTTP":  {"--registry", "localhost:5000/a/b", "--plain-http", "--flux-namespace", "default"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"bootstrap-manifests", "edge-1", "../../examples", "-n", "alpha"}, args...),
				strings.NewReader("pull-password"), &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())
			ns := "default"
			if !slices.Contains(args, "--flux-namespace") {
				ns = "flux-system"
				_, err := api.Client.CoreV1().Namespaces().Create(context.Background(),
					&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
				if !apierrors.IsAlreadyExists(err) {
					require.NoError(t, err)
				}
			}
			for key, d := range docs(t, stdout.String()) {
				u := &unstructured.Unstructured{Object: d}
				gvr := map[string]schema.GroupVersionResource{"Secret": testenv.SecretGVR, "OCIRepository": testenv.OCIRepositoryGVR, "HelmRelease": testenv.HelmReleaseGVR}[u.GetKind()]
				require.NotEmpty(t, gvr.Resource, key)
				_, err = dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u,
					metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
				assert.NoError(t, err, "%s is valid for the API server", key)
			}
		})
	}
}

// TestBootstrapManifestsChecksItsInput: names are DNS labels, a Target named
// with PATHs must exist there, -o json prints a List kubectl applies.
func TestBootstrapManifestsChecksItsInput(t *testing.T) {
	reg := []string{"--registry", "oci://registry.example.com/solar"}
	code, _, stderr := solar(t, append([]string{"bootstrap-manifests", "Edge_1", "-n", "alpha"}, reg...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `invalid TARGET "Edge_1"`)
	code, _, stderr = solar(t, append([]string{"bootstrap-manifests", "edge-1", "-n", "al.pha"}, reg...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `invalid -n "al.pha"`)

	code, _, stderr = solar(t, append([]string{"bootstrap-manifests", "edge-9", "../../examples", "-n", "alpha"}, reg...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no Target alpha/edge-9 in ../../examples")
	// Without -n, the Target is looked for in namespace default: the error
	// says where it is.
	code, _, stderr = solar(t, append([]string{"bootstrap-manifests", "edge-1", "../../examples"}, reg...)...)
	assert.Equal(t, 1, code)
	assert.Equal(t, "solar: no Target default/edge-1 in ../../examples; edge-1 exists in namespace alpha (pass -n alpha)\n", stderr)

	code, stdout, stderr := solar(t, append([]string{"bootstrap-manifests", "plant-1", "../../examples", "-n", "beta", "-o", "json"}, reg...)...)
	require.Equal(t, 0, code, stderr)
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &list))
	assert.Equal(t, "List", list.Kind)
	require.Len(t, list.Items, 3)
	spec := list.Items[1]["spec"].(map[string]any)
	assert.Equal(t, "oci://registry.example.com/solar/beta/bootstrap-plant-1", spec["url"], "oci:// in --registry is taken once")
}
