package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// victim's Target and the Registry it is granted.
const victim = `
kind: Registry
metadata: {name: render, namespace: reg}
spec: {hostname: registry.example.com}
---
kind: ReferenceGrant
metadata: {name: g, namespace: reg}
spec:
  from: [{group: solar.opendefense.cloud, kind: Target, namespace: victim}]
  to: [{group: solar.opendefense.cloud, kind: Registry}]
---
kind: Target
metadata: {name: t, namespace: victim}
spec: {renderRegistryRef: {name: render, namespace: reg}}
`

// planVictim plans namespace victim from the objects of docs, as a run of
// the controller reads them (input), and returns the plan.
func planVictim(t *testing.T, docs string) *pipeline.Plan {
	t.Helper()
	var objs []client.Object
	for _, d := range strings.Split(victim+"---\n"+docs, "\n---\n") {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(d), &u.Object))
		u.SetAPIVersion("solar.opendefense.cloud/v1alpha1")
		objs = append(objs, u)
	}
	c := fake.NewClientBuilder().WithObjects(objs...).Build()
	in, problems, err := input(context.Background(), c, "victim", "ops")
	require.NoError(t, err)
	require.Empty(t, problems)
	plan, err := pipeline.NewPlan(context.Background(), pipeline.Options{
		LoadOptions:       pipeline.LoadOptions{Objects: in, Namespace: "victim"},
		CredentialOptions: pipeline.CredentialOptions{NoCredentials: true}})
	require.NoError(t, err)
	return plan
}

// TestInputFollowsGrantsTwoHops: team binds victim's Target to a Release
// whose ComponentVersion is in lib, which grants team only: victim's run
// reads lib too, as solar publish of the whole tree would.
func TestInputFollowsGrantsTwoHops(t *testing.T) {
	plan := planVictim(t, `kind: ReferenceGrant
metadata: {name: g, namespace: victim}
spec:
  from: [{group: solar.opendefense.cloud, kind: ReleaseBinding, namespace: team}]
  to: [{group: solar.opendefense.cloud, kind: Target}]
---
kind: Release
metadata: {name: r, namespace: team}
spec: {componentVersionRef: {name: cv, namespace: lib}, targetNamespace: x}
---
kind: ReleaseBinding
metadata: {name: b, namespace: team}
spec: {targetRef: {name: t, namespace: victim}, releaseRef: {name: r}}
---
kind: Component
metadata: {name: c, namespace: lib}
spec: {}
---
kind: ComponentVersion
metadata: {name: cv, namespace: lib}
spec:
  componentRef: {name: c}
  tag: 1.0.0
  resources: {chart: {repository: ghcr.io/x/y, tag: 1.0.0, helm: {name: podinfo, version: 1.0.0}}}
  entrypoint: {resourceName: chart, type: helm}
---
kind: ReferenceGrant
metadata: {name: g, namespace: lib}
spec:
  from: [{group: solar.opendefense.cloud, kind: Release, namespace: team}]
  to: [{group: solar.opendefense.cloud, kind: ComponentVersion}]`)
	assert.False(t, plan.Problems.HasErrors(), "%v", plan.Problems)
	require.Len(t, plan.Targets, 1)
	assert.False(t, plan.Targets[0].Problems.HasErrors(), "%v", plan.Targets[0].Problems)
	assert.Len(t, plan.Targets[0].Releases, 1, "the bound release")
}

// TestTenantCannotStallAnother: evil binds victim's Target without victim's
// grant (and grants victim, to be read with it): victim's run goes on, the
// binding fails closed and is only a warning there.
func TestTenantCannotStallAnother(t *testing.T) {
	plan := planVictim(t, `kind: ReferenceGrant
metadata: {name: lure, namespace: evil}
spec:
  from: [{group: solar.opendefense.cloud, kind: Release, namespace: victim}]
  to: [{group: solar.opendefense.cloud, kind: ComponentVersion}]
---
kind: Release
metadata: {name: r, namespace: evil}
spec: {chart: {repository: ghcr.io/x/y, tag: 1.0.0}, targetNamespace: x}
---
kind: ReleaseBinding
metadata: {name: b, namespace: evil}
spec: {targetRef: {name: t, namespace: victim}, releaseRef: {name: r}}`)
	assert.False(t, plan.Problems.HasErrors(), "%v", plan.Problems)
	require.Len(t, plan.Targets, 1)
	assert.Empty(t, plan.Targets[0].Releases, "an ungranted binding binds nothing")
}

// TestPipelineConfigOnlyFromItsNamespace: a PipelineConfig in a tenant's
// namespace is not read (it would set every agent's API server), so it
// neither stalls a run as a second one nor takes over as the only one.
func TestPipelineConfigOnlyFromItsNamespace(t *testing.T) {
	plan := planVictim(t, `kind: PipelineConfig
metadata: {name: a, namespace: ops}
spec: {agent: {apiserverURL: "https://solar.example.com"}}
---
kind: PipelineConfig
metadata: {name: b, namespace: evil}
spec: {agent: {apiserverURL: "https://evil.example.com"}}`)
	assert.False(t, plan.Problems.HasErrors(), "%v", plan.Problems)
	require.Len(t, plan.Targets, 1)
}

// TestInputReadsTheMirrorRegistry (issue 52): the PipelineConfig's mirror
// Registry is in the PipelineConfig's namespace, which no grant relates to
// victim's: victim's run reads it, and its Target's application charts are
// pulled from the mirror.
func TestInputReadsTheMirrorRegistry(t *testing.T) {
	plan := planVictim(t, `kind: PipelineConfig
metadata: {name: a, namespace: ops}
spec: {registries: {mirror: {registryRef: {name: site}}}}
---
kind: Registry
metadata: {name: site, namespace: ops}
spec: {hostname: registry.site.example, targetPullSecretName: site-pull}
---
kind: Release
metadata: {name: r, namespace: victim}
spec: {chart: {repository: ghcr.io/x/y, tag: 1.0.0}, targetNamespace: x}
---
kind: ReleaseBinding
metadata: {name: b, namespace: victim}
spec: {targetRef: {name: t}, releaseRef: {name: r}}`)
	assert.False(t, plan.Problems.HasErrors(), "%v", plan.Problems)
	require.Len(t, plan.Targets, 1)
	assert.False(t, plan.Targets[0].Problems.HasErrors(), "%v", plan.Targets[0].Problems)
	require.Len(t, plan.Targets[0].Releases, 1)
	assert.Equal(t, "registry.site.example/mirror/ghcr.io/x/y", plan.Targets[0].Releases[0].Chart.Repository)
}
