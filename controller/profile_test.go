package controller

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"
)

// provider's Profile, its Release, and victim's grant that lets the Profile
// match victim's Targets (SolAr's operator-manual layout).
const providerProfile = `kind: ReferenceGrant
metadata: {name: provider, namespace: victim}
spec:
  from:
  - {group: solar.opendefense.cloud, kind: Profile, namespace: provider}
  - {group: solar.opendefense.cloud, kind: ReleaseBinding, namespace: provider}
  to: [{group: solar.opendefense.cloud, kind: Target}]
---
kind: Release
metadata: {name: app, namespace: provider}
spec: {chart: {repository: ghcr.io/x/app, tag: 1.0.0}, targetNamespace: app}
---
kind: Profile
metadata: {name: all, namespace: provider}
spec: {releaseRef: {name: app}}`

// TestInputCrossNamespaceProfile: victim's run reads the Profile of
// provider that victim's grant lets in, and binds its Release.
func TestInputCrossNamespaceProfile(t *testing.T) {
	plan := planVictim(t, providerProfile)
	assert.False(t, plan.Problems.HasErrors(), "%v", plan.Problems)
	require.Len(t, plan.Targets, 1)
	require.Len(t, plan.Targets[0].Releases, 1, "the Profile of provider binds app")
	assert.Equal(t, "provider", plan.Targets[0].Releases[0].Release.Namespace)
}

// TestProfileChangeRunsItsTargetsNamespace: a change of provider's Profile
// runs victim, whose Targets it matches.
func TestProfileChangeRunsItsTargetsNamespace(t *testing.T) {
	var profile *unstructured.Unstructured
	c := fake.NewClientBuilder()
	for _, d := range strings.Split(victim+"---\n"+providerProfile, "\n---\n") {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(d), &u.Object))
		u.SetAPIVersion("solar.opendefense.cloud/v1alpha1")
		if u.GetKind() == "Profile" {
			profile = u
		}
		c = c.WithObjects(u)
	}
	require.NotNil(t, profile)
	r := &reconciler{client: c.Build(), opts: Options{ConfigNamespace: "ops"}, log: slog.Default()}
	var got []string
	for _, req := range r.namespaces(context.Background(), profile) {
		got = append(got, req.Name)
	}
	assert.Contains(t, got, "victim")
}
