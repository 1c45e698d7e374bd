package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// fleetObjects are Devices d1…d4 of namespace fleet and a DeviceUpgrade of
// them to 1.4.0 in two waves: one canary, the rest.
func fleetObjects() []string {
	var objs []string
	for i := 1; i <= 4; i++ {
		objs = append(objs, fmt.Sprintf(`{apiVersion: solar.opendefense.cloud/v1alpha1, kind: Device,
  metadata: {name: d%d, namespace: fleet, labels: {ring: field}}, spec: {deviceId: d%d, platform: linux/amd64}}`, i, i))
	}
	return append(objs, `apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: field, namespace: fleet}
spec:
  agentVersion: 1.4.0
  artifact: fleet/agent:1.4.0
  deviceSelector: {matchLabels: {ring: field}}
  rollout:
    waves:
      - {name: canary, count: 1}
      - {name: rest}
`)
}

// attempted are the devices that hold an attempt in the bucket (none while
// it does not exist).
func attempted(t *testing.T, js jetstream.JetStream) []string {
	t.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, "solar-fleet")
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for i := 1; i <= 4; i++ {
		if _, err := kv.Get(ctx, fmt.Sprintf("attempt.d%d", i)); err == nil {
			out = append(out, fmt.Sprintf("d%d", i))
		}
	}
	return out
}

// TestControllerFleetPass (issue 50): a controller with NATS is the fleet's
// pass. The DeviceUpgrade created in the API server gets its canary's
// attempt; once the canary reports the version committed into the bucket
// (no object changes, and the rollout poll is an hour), the controller's
// watch of the bucket admits the rest.
func TestControllerFleetPass(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd, kube-apiserver, registry and NATS")
	}
	api := testenv.StartAPIServer(t)
	e := &env{api: api, registry: testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})}
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	nats := testenv.StartNATS(t)
	_, js := nats.Connect(t)
	ctx := context.Background()

	agent := filepath.Join(t.TempDir(), "agent")
	require.NoError(t, os.WriteFile(agent, []byte("#!/bin/sh\necho an agent\n"), 0o755))
	ro := e.registryOptions()
	_, err = pipeline.PushAgent(ctx, pipeline.StoreOptions{Registry: &ro},
		pipeline.AgentOptions{Repository: "fleet/agent", Version: "1.4.0", Files: []string{agent + "=linux/amd64"}})
	require.NoError(t, err)
	api.CreateNamespaces(t, "fleet")
	for _, doc := range fleetObjects() {
		var u unstructured.Unstructured
		require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
		_, err := dyn.Resource(gvr(u.GetKind())).Namespace("fleet").Create(ctx, &u, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err, doc)
	}

	opts := e.options(t)
	opts.RolloutPoll = time.Hour // only the bucket's watch can start the next wave
	opts.Fleet = &FleetOptions{NATS: fleetkv.NATS{Servers: nats.URL, Bucket: "solar-fleet"}, WatchRetry: 200 * time.Millisecond}
	start(t, opts)

	var canary []string
	require.Eventually(t, func() bool { canary = attempted(t, js); return len(canary) > 0 }, time.Minute, 100*time.Millisecond,
		"the canary got no attempt")
	time.Sleep(2 * time.Second)
	require.Len(t, attempted(t, js), 1, "the canary only")
	kv, err := js.KeyValue(ctx, "solar-fleet")
	require.NoError(t, err)
	_, err = kv.Put(ctx, "state."+canary[0], []byte(`{"state":"committed","version":"1.4.0"}`))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(attempted(t, js)) == 4 }, time.Minute, 100*time.Millisecond,
		"the canary committed: the controller did not admit the rest")
}
