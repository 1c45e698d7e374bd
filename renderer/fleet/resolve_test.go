package fleet

import (
	"errors"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// TestResolveAgents: Resolve reads nothing: an agent index the caller could
// not read, or did not, is a problem of the DeviceUpgrade's spec.artifact
// (file and line), as is a platform the index lacks; the other
// DeviceUpgrades are planned.
func TestResolveAgents(t *testing.T) {
	objs, problems := load.Bytes("fleet.yaml", []byte(`
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: a}
spec: {deviceId: a, platform: linux/arm64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: b}
spec: {deviceId: b, platform: linux/amd64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: c}
spec: {deviceId: c, platform: linux/arm64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: broken}
spec: {agentVersion: 1.0.0, artifact: "fleet/agent:1.0.0", deviceIds: [a]}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: unread}
spec: {agentVersion: 2.0.0, artifact: "fleet/agent:2.0.0", deviceIds: [b]}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: ok}
spec: {agentVersion: 3.0.0, artifact: "fleet/agent:3.0.0", deviceIds: [c]}
`), load.Options{Namespace: "fleet"})
	require.False(t, problems.HasErrors(), problems)
	set, err := model.NewSet(objs)
	require.NoError(t, err)
	assert.Equal(t, []string{"fleet/agent:1.0.0", "fleet/agent:3.0.0", "fleet/agent:2.0.0"}, Artifacts(set), "by the DeviceUpgrades' names")

	layer := ocispec.Descriptor{Digest: "sha256:0000000000000000000000000000000000000000000000000000000000000001", Size: 1}
	planned, problems := Resolve(set, map[string]Agent{
		"fleet/agent:1.0.0": {Err: errors.New("reading 1.0.0: not found")},
		"fleet/agent:3.0.0": {Repository: "fleet/agent", BlobURL: "https://r/", Layers: map[string]ocispec.Descriptor{"linux/arm64": layer}},
	}, time.Now())
	require.Len(t, planned, 1)
	assert.Equal(t, "c", planned[0].Attempt.DeviceID)
	assert.Equal(t, "https://r/"+layer.Digest.String(), planned[0].Attempt.Artifact.URL)
	require.Len(t, problems, 2)
	for _, p := range problems {
		assert.Equal(t, "spec.artifact", p.Path)
		assert.Positive(t, p.Line)
	}
	assert.Contains(t, problems.Sorted()[0].Message, "DeviceUpgrade fleet/broken: reading 1.0.0: not found")
	assert.Contains(t, problems.Sorted()[1].Message, "DeviceUpgrade fleet/unread: fleet/agent:2.0.0: the agent index was not read")
}
