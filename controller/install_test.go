package controller

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/internal/testkit/imagetest"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestControllerInstalledFromItsManifests: Solar's own solar image, built by
// internal/imagebuild and published with the publish path, installed with
// config/controller (kubectl apply -k, the image set by digest as make images
// sets it) on a real node, runs as 65532 under the controller's
// ServiceAccount and least-privilege RBAC (in-cluster config), takes the
// Lease and reconciles the examples in the API server: every Target Ready,
// and solar publish of the same objects from files finds every bootstrap
// chart unchanged, at the controller's versions and digests.
//
// The test's overlay changes what a test machine needs: one replica on the
// host's network (the registry listens on 127.0.0.1 only), on the real node,
// with the test registry, plain HTTP, and the examples' PipelineConfig
// namespace.
func TestControllerInstalledFromItsManifests(t *testing.T) {
	testenv.SkipUnlessNodeCan(t)
	api := testenv.StartCluster(t)
	e := startEnvOn(t, api, testenv.RegistryOptions{})
	images := testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true})
	node := testenv.StartNode(t, api, images)
	image := imagetest.Publish(t, images, "solar")
	ctx := context.Background()

	health := testenv.FreePort(t)
	overlay := t.TempDir()
	name, digest, _ := strings.Cut(image, "@")
	base, err := filepath.Rel(overlay, filepath.Join(testenv.Root(t), "config", "controller"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), fmt.Appendf(nil, `resources:
  - %s
images:
  - name: solar
    newName: %s
    digest: %s
patches:
  - target: {kind: Deployment, name: solar-controller}
    patch: |
      - {op: replace, path: /spec/replicas, value: 1}
      - {op: add, path: /spec/template/spec/hostNetwork, value: true}
      - {op: add, path: /spec/template/spec/nodeSelector, value: {kubernetes.io/hostname: %s}}
      - op: replace
        path: /spec/template/spec/containers/0/args
        value: [controller, --registry=%s/solar, --plain-http, --cache-dir=/tmp/solar,
                --pipeline-config-namespace=shared, --metrics-addr=0, --health-addr=:%d]
      - op: replace
        path: /spec/template/spec/containers/0/ports
        value: [{name: health, containerPort: %d}]
`, base, name, digest, node.Name, e.registry.Host, health, health), 0o644))
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(testenv.Tool(t, "kubectl"), append([]string{"--kubeconfig", api.Kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	kubectl("", "apply", "-k", overlay)
	for _, ns := range []string{"alpha", "beta"} {
		kubectl("", "create", "rolebinding", "solar-controller", "-n", ns,
			"--clusterrole", "solar-controller-tenant", "--serviceaccount", "solar-system:solar-controller")
	}
	auth := base64.StdEncoding.EncodeToString([]byte(e.registry.Username + ":" + e.registry.Password))
	_, err = api.Client.CoreV1().Secrets("solar-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "solar-registry"},
		StringData: map[string]string{"config.json": `{"auths":{"` + e.registry.Host + `":{"auth":"` + auth + `"}}}`},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	first := e.waitReady(t, 3*time.Minute)
	for _, id := range allTargets[:2] { // alpha's get the agent: minted under the tenant RoleBinding and the admission policy
		st, _ := e.targetStatusOf(t, id[0], id[1])
		cred := findCondition(st.Conditions, "AgentCredentialReady")
		require.NotNil(t, cred, id)
		assert.Equal(t, "Issued", cred.Reason, "%v: %s", id, cred.Message)
	}
	pods, err := api.Client.CoreV1().Pods("solar-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=solar-controller"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	pod := pods.Items[0]
	assert.Equal(t, image, pod.Spec.Containers[0].Image, "the manifests name the published image by digest")
	assert.Equal(t, node.Name, pod.Spec.NodeName)
	logs, err := api.Client.CoreV1().Pods("solar-system").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err)
	t.Logf("the controller's log:\n%s", logs)
	lease, err := api.Client.CoordinationV1().Leases("solar-system").Get(ctx, "solar-controller", metav1.GetOptions{})
	require.NoError(t, err, "the controller's Lease")
	require.NotNil(t, lease.Spec.HolderIdentity)
	assert.NotEmpty(t, *lease.Spec.HolderIdentity)

	e.assertCLIUnchanged(t, first)
}
