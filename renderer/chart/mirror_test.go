package chart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/load"
)

// mirrored is a Target whose Release's chart a plain-HTTP site registry
// mirrors: the PipelineConfig names it, with a path of its own.
const mirrored = `
kind: Registry
metadata: {name: render, namespace: site}
spec: {hostname: render.example}
---
kind: Registry
metadata: {name: mirror, namespace: site}
spec: {hostname: "10.0.0.1:5000", plainHTTP: true, targetPullSecretName: mirror-pull}
---
kind: PipelineConfig
metadata: {name: solar, namespace: site}
spec: {registries: {mirror: {registryRef: {name: mirror}, path: air/gap}}}
---
kind: Target
metadata: {name: t, namespace: site}
spec: {renderRegistryRef: {name: render}}
---
kind: Release
metadata: {name: web, namespace: site}
spec: {chart: {repository: src.example/charts/web, digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}
---
kind: ReleaseBinding
metadata: {name: web, namespace: site}
spec: {releaseRef: {name: web}, targetRef: {name: t}}
`

// TestMirroredOCIRepository: the release chart of a mirrored release, as
// its Target's bootstrap chart installs it, renders an OCIRepository of the
// mirror's copy (digest kept), with the mirror's pull secret and plainHTTP.
func TestMirroredOCIRepository(t *testing.T) {
	objs, problems := load.Bytes("in.yaml", []byte(mirrored), load.Options{})
	require.Empty(t, problems)
	plan := testenv.Plan(t, objs)
	tp := plan.Targets[0]
	require.Empty(t, tp.Problems)
	sel := tp.Releases[0]
	var repo map[string]any
	for _, d := range render(t, Release(sel, AppOptions{}), sel.Names.Source.Name, "flux-system", TargetValues(sel)) {
		if d["kind"] == "OCIRepository" {
			repo = d["spec"].(map[string]any)
		}
	}
	require.NotNil(t, repo)
	assert.Equal(t, "oci://10.0.0.1:5000/air/gap/src.example/charts/web", repo["url"])
	assert.Equal(t, map[string]any{"digest": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}, repo["ref"])
	assert.Equal(t, map[string]any{"name": "mirror-pull"}, repo["secretRef"])
	assert.Equal(t, true, repo["insecure"])
}
