package testenv

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAPIServerServesCRDs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real etcd and kube-apiserver")
	}
	s := StartAPIServer(t)
	v, err := s.Client.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.36.3", v.GitVersion)
	res, err := s.Client.Discovery().ServerResourcesForGroupVersion("solar.opendefense.cloud/v1alpha1")
	require.NoError(t, err)
	var names []string
	for _, r := range res.APIResources {
		names = append(names, r.Name)
	}
	// Every kind's CRD (config/crd), and the Target's and Rollout's status.
	assert.ElementsMatch(t, []string{"targets", "targets/status", "targetreports", "profiles", "releases",
		"components", "componentversions", "registries", "releasebindings", "registrybindings",
		"referencegrants", "pipelineconfigs", "devices", "deviceupgrades", "rollouts", "rollouts/status"}, names)
	_, err = s.Client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err, "the admin of the kubeconfig may list namespaces")
}
