package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/solar-pipeline/solar/api"
)

// descriptor and manifest are the OCI image-spec's, with the fields in the
// order the spec's Go types marshal them: the bytes, and so the digest, are
// those oras.PackManifest wrote before solar fleet apply pushed these
// (renderer/fleet's test compares them, so that bindings written then hold).
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Data      []byte `json:"data,omitempty"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType,omitempty"`
	ArtifactType  string            `json:"artifactType,omitempty"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

func describe(mediaType string, b []byte) descriptor {
	sum := sha256.Sum256(b)
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(b))}
}

// AttemptArtifact is the attempt's OCI artifact: its manifest, the empty
// config and the layer (the attempt's JSON), and the manifest's digest,
// which the bucket's uuid.<uuid> binding names for a genuine attempt.
func AttemptArtifact(a Attempt) (manifestJSON, config, layer []byte, digest string, err error) {
	layer, err = json.Marshal(a)
	if err != nil {
		return nil, nil, nil, "", err
	}
	config = []byte("{}")
	empty := describe(api.MediaTypeOCIEmpty, config)
	empty.Data = config
	manifestJSON, err = json.Marshal(manifest{
		SchemaVersion: 2, MediaType: api.MediaTypeOCIManifest, ArtifactType: api.ArtifactTypeAttempt,
		Config: empty, Layers: []descriptor{describe(api.MediaTypeAttempt, layer)},
		Annotations: map[string]string{"org.opencontainers.image.created": "1970-01-01T00:00:00Z", api.AnnotationDeviceID: a.DeviceID},
	})
	if err != nil {
		return nil, nil, nil, "", err
	}
	return manifestJSON, config, layer, describe("", manifestJSON).Digest, nil
}

// AttemptDigest is the digest of the attempt's artifact (AttemptArtifact).
func AttemptDigest(a Attempt) (string, error) {
	_, _, _, d, err := AttemptArtifact(a)
	return d, err
}
