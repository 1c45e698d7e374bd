package fleet

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/model"
)

// Agent is an agent index as the caller read it from the registry for a
// DeviceUpgrade's spec.artifact (package pipeline reads them): Resolve reads
// nothing.
type Agent struct {
	// Repository is the index's repository, as the store names it.
	Repository string
	// BlobURL is where a device downloads a blob of the agent's repository:
	// BlobURL + digest.
	BlobURL string
	// Layers are the binaries by platform.
	Layers map[string]ocispec.Descriptor
	// Err says why the index could not be read; the rest is then empty.
	Err error
}

// Artifacts are the spec.artifact of the set's DeviceUpgrades, each once, in
// the DeviceUpgrades' order: the agent indexes a caller reads before Resolve.
func Artifacts(set *model.Set) []string {
	var out []string
	for _, u := range set.DeviceUpgrades {
		if !slices.Contains(out, u.Spec.Artifact) {
			out = append(out, u.Spec.Artifact)
		}
	}
	return out
}

// SplitArtifact splits a spec.artifact, REPO:VERSION or REPO@DIGEST, into
// its repository and its reference (a tag or a digest).
func SplitArtifact(artifact string) (repo, ref string, err error) {
	repo, ref, ok := strings.Cut(artifact, "@")
	if !ok {
		i := strings.LastIndex(artifact, ":")
		if i < 0 {
			return "", "", fmt.Errorf("%s is not REPO:VERSION or REPO@DIGEST", artifact)
		}
		repo, ref = artifact[:i], artifact[i+1:]
	}
	return repo, ref, nil
}

// AgentIndex parses the root of ref, of the given media type, as an agent
// index: its manifests are the binaries' (AgentLayer).
func AgentIndex(ref, mediaType string, data []byte) (ocispec.Index, error) {
	var index ocispec.Index
	if err := json.Unmarshal(data, &index); err != nil || mediaType != ocispec.MediaTypeImageIndex || index.ArtifactType != api.ArtifactTypeAgent {
		return ocispec.Index{}, fmt.Errorf("%s is not an agent index (%s of artifact type %s); push one with solar fleet push-agent", ref, mediaType, index.ArtifactType)
	}
	return index, nil
}

// AgentLayer parses the manifest m of the agent index ref (data, its
// bytes) and returns its binary layer.
func AgentLayer(ref string, m ocispec.Descriptor, data []byte) (ocispec.Descriptor, error) {
	var manifest ocispec.Manifest
	if err := json.Unmarshal(data, &manifest); err != nil || len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != api.MediaTypeAgentBinary {
		return ocispec.Descriptor{}, fmt.Errorf("%s: the manifest %s of %s is not an agent binary's", ref, m.Digest, PlatformString(m.Platform))
	}
	return manifest.Layers[0], nil
}
