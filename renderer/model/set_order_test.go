package model

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/load"
)

// targets is a namespace of n Targets named edge-0 … edge-<n-1>, in that
// order: not the set's (edge-10 sorts before edge-2).
func targets(t testing.TB, n int) []*load.Object {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata: {name: edge-%d, namespace: ns}\nspec: {renderRegistryRef: {name: r}}\n", i)
	}
	objs, problems := load.Bytes("in.yaml", []byte(b.String()), load.Options{})
	require.Empty(t, problems)
	return objs
}

// TestSetOrder: a set's lists are by namespace, then name, whatever the
// order of the input.
func TestSetOrder(t *testing.T) {
	s, err := NewSet(targets(t, 12))
	require.NoError(t, err)
	var names []string
	for _, tg := range s.Targets {
		names = append(names, tg.Name)
	}
	assert.Equal(t, []string{"edge-0", "edge-1", "edge-10", "edge-11", "edge-2", "edge-3", "edge-4", "edge-5", "edge-6", "edge-7", "edge-8", "edge-9"}, names)
}

// grants is a set of a ReferenceGrant in each of n namespaces (listed
// last first), each letting Profiles of ns-team read the Releases there.
func grants(t testing.TB, n int) *Set {
	var b strings.Builder
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: ReferenceGrant\nmetadata: {name: g, namespace: ns-%d}\nspec:\n  from: [{group: solar.opendefense.cloud, kind: Profile, namespace: ns-team}]\n  to: [{group: solar.opendefense.cloud, kind: Release}]\n", i)
	}
	objs, problems := load.Bytes("in.yaml", []byte(b.String()), load.Options{})
	require.Empty(t, problems)
	s, err := NewSet(objs)
	require.NoError(t, err)
	return s
}

// TestGrantedInAnyNamespace: the grant of each namespace is found,
// whatever the order of the input; none where there is none.
func TestGrantedInAnyNamespace(t *testing.T) {
	s := grants(t, 12)
	for i := range 12 {
		assert.True(t, s.Granted("Profile", "ns-team", "Release", fmt.Sprintf("ns-%d", i), "web"), i)
	}
	assert.False(t, s.Granted("Profile", "ns-team", "Release", "ns-12", "web"))
	assert.False(t, s.Granted("Profile", "ns-other", "Release", "ns-3", "web"))
	assert.False(t, s.Granted("Profile", "ns-team", "Registry", "ns-3", "r"))
}

// BenchmarkGranted: 1,000 namespaces with a grant each, asked 100,000
// times: a search of the grants' namespaces, not a scan of every grant.
func BenchmarkGranted(b *testing.B) {
	s := grants(b, 1000)
	for b.Loop() {
		for i := range 100000 {
			if !s.Granted("Profile", "ns-team", "Release", fmt.Sprintf("ns-%d", i%1000), "web") {
				b.Fatal(i)
			}
		}
	}
}
