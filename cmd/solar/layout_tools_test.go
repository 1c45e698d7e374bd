package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestLayoutReadByStandardTools: each repository of out/ is a standard OCI
// image layout whose tags are the versions: the oras CLI and
// go-containerregistry read a chart back by tag.
func TestLayoutReadByStandardTools(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := solar(t, "render", "--no-credentials", "-o", "json", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	want := digests(decodeReport(t, stdout))["alpha/bootstrap-edge-1"]
	require.NotEmpty(t, want)
	repo := filepath.Join(out, "alpha", "bootstrap-edge-1")

	// go-containerregistry: the index names the version as its tag.
	p, err := layout.FromPath(repo)
	require.NoError(t, err)
	idx, err := p.ImageIndex()
	require.NoError(t, err)
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, m.Manifests, 1)
	assert.Equal(t, "0.0.1", m.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	assert.Equal(t, want, "0.0.1 "+m.Manifests[0].Digest.String())

	// The oras CLI, by tag, as users would.
	cmd := exec.Command(testenv.Tool(t, "oras"), "manifest", "fetch", "--oci-layout", repo+":0.0.1")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	b, err := cmd.Output()
	require.NoError(t, err)
	var manifest struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
		} `json:"layers"`
	}
	require.NoError(t, json.Unmarshal(b, &manifest))
	require.Len(t, manifest.Layers, 1)
	assert.Equal(t, api.MediaTypeHelmChart, manifest.Layers[0].MediaType)
	dst := filepath.Join(t.TempDir(), "copy")
	cmd = exec.Command(testenv.Tool(t, "oras"), "cp", "--from-oci-layout", repo+":0.0.1", "--to-oci-layout", dst+":0.0.1")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	copied, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", copied)
	p, err = layout.FromPath(dst)
	require.NoError(t, err)
	idx, err = p.ImageIndex()
	require.NoError(t, err)
	m, err = idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, m.Manifests, 1)
	assert.Equal(t, want, "0.0.1 "+m.Manifests[0].Digest.String(), "oras copies the chart byte for byte")
}
