package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/load"
)

const rollouts = "../../testdata/rollouts"

// TestRolloutTestdata: the Rollout with every field (testdata/rollouts,
// kept out of examples/ so that no render sees one) vets, and the API
// server takes it as it is with solar's CRD.
func TestRolloutTestdata(t *testing.T) {
	code, stdout, stderr := solar(t, "vet", rollouts)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Equal(t, "1 object valid, 0 warnings\n", stderr)

	if testing.Short() {
		t.Skip("-short: the CRD half runs a real etcd and kube-apiserver")
	}
	srv := testenv.StartAPIServer(t)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(srv.Config)
	require.NoError(t, err)
	objs, problems, _ := load.Paths([]string{rollouts}, load.Options{})
	require.Empty(t, problems)
	require.Len(t, objs, 1)
	o := objs[0]
	require.Equal(t, api.KindRollout, o.Kind)
	_, err = srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	got, err := dyn.Resource(kube.GVR(api.KindRollout)).Namespace(o.Namespace).Create(ctx,
		&unstructured.Unstructured{Object: o.Fields}, metav1.CreateOptions{FieldValidation: "Strict"})
	require.NoError(t, err, "%s at %s", o.ID(), o.Pos())
	assert.Equal(t, o.Fields["spec"], got.Object["spec"], "nothing pruned")
}
