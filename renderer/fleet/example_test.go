package fleet_test

import (
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// Planning a DeviceUpgrade over three Devices: the selector names two of
// them, and each gets a sealed attempt for the binary of its platform. The
// agent index was read beforehand (here, given as data): Resolve reads
// nothing.
func Example() {
	objs, problems := load.Bytes("fleet.yaml", []byte(`
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: gate-01, labels: {ring: canary}}
spec: {deviceId: gate-01, platform: linux/arm64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: gate-02, labels: {ring: canary}}
spec: {deviceId: gate-02, platform: linux/amd64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: gate-03, labels: {ring: main}}
spec: {deviceId: gate-03, platform: linux/amd64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: canary}
spec:
  agentVersion: 1.4.0
  artifact: fleet/agent:1.4.0
  deviceSelector: {matchLabels: {ring: canary}}
`), load.Options{Namespace: "fleet"})
	if problems.HasErrors() {
		panic(problems)
	}
	set, err := model.NewSet(objs)
	if err != nil {
		panic(err)
	}
	binary := func(data string) ocispec.Descriptor {
		return ocispec.Descriptor{Digest: digest.FromString(data), Size: int64(len(data))}
	}
	agents := map[string]fleet.Agent{"fleet/agent:1.4.0": {Repository: "fleet/agent",
		BlobURL: "https://registry.example.com/v2/fleet/agent/blobs/",
		Layers:  map[string]ocispec.Descriptor{"linux/arm64": binary("arm64 build"), "linux/amd64": binary("amd64 build")}}}
	for _, a := range fleet.Artifacts(set) {
		fmt.Println("read first:", a)
	}
	// now is when the update windows are picked; these devices have none.
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	planned, problems := fleet.Resolve(set, agents, now)
	if problems.HasErrors() {
		panic(problems)
	}
	for _, p := range planned {
		a := p.Attempt
		packed, err := fleet.PackAttempt(a) // its OCI artifact, as bytes
		if err != nil {
			panic(err)
		}
		fmt.Println(a.DeviceID, p.Upgrade, a.TargetVersion, a.Artifact.Platform, a.Artifact.Size, a.UUID, len(packed.Blobs))
		fmt.Println(" ", a.Artifact.URL)
	}
	// Output:
	// read first: fleet/agent:1.4.0
	// gate-01 fleet/canary 1.4.0 linux/arm64 11 022a59a4-54f8-597f-9a73-53016c6fd9e2 3
	//   https://registry.example.com/v2/fleet/agent/blobs/sha256:5eb5cd8b82ad6e39dca6d782cc5dc0add3b9828f1eab680a215b3090d75fa715
	// gate-02 fleet/canary 1.4.0 linux/amd64 11 f1d6bf73-feb4-54c4-b6d9-9e2f22a30dbe 3
	//   https://registry.example.com/v2/fleet/agent/blobs/sha256:7b366cd07adfe85550f028382ea79c59e19263086676508d87988ba6e0b605bc
}
