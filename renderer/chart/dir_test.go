package chart

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// The controller's chart directory packaged as make images publishes it: the
// version and appVersion set, the image by digest in values.yaml with the
// file's comments kept, the same bytes at every run; the helm CLI renders the
// Deployment with that image. A path values.yaml lacks is an error.
func TestDirPackagesTheControllerChart(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	d := Dir{FS: os.DirFS("../../charts/solar-controller"), AppVersion: "0.0.0-g0123456789ab",
		Set: map[string]string{"image.repository": "127.0.0.1:5000/solar/solar", "image.digest": digest, "image.tag": ""}}
	p, err := d.Package("0.0.3")
	require.NoError(t, err)
	again, err := d.Package("0.0.3")
	require.NoError(t, err)
	assert.Equal(t, p.Archive, again.Archive, "the same directory, the same chart")

	c, err := loader.LoadArchive(bytes.NewReader(p.Archive))
	require.NoError(t, err)
	assert.Equal(t, "solar-controller", c.Metadata.Name)
	assert.Equal(t, "0.0.3", c.Metadata.Version)
	assert.Equal(t, "0.0.0-g0123456789ab", c.Metadata.AppVersion)
	var values string
	for _, f := range c.Raw {
		if f.Name == "values.yaml" {
			values = string(f.Data)
		}
	}
	assert.Contains(t, values, "  digest: \""+digest+"\"\n")
	assert.Contains(t, values, "# replicas elect one leader", "values.yaml keeps its comments")

	tgz := filepath.Join(t.TempDir(), "solar-controller-0.0.3.tgz")
	require.NoError(t, os.WriteFile(tgz, p.Archive, 0o644))
	out, err := exec.Command(testenv.Tool(t, "helm"), "template", "solar-controller", tgz, "--namespace", "solar",
		"--show-only", "templates/deployment.yaml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "image: 127.0.0.1:5000/solar/solar@"+digest+"\n")

	d.Set = map[string]string{"image.name": "x"}
	_, err = d.Package("0.0.3")
	assert.ErrorContains(t, err, "no value image.name to set")
}
