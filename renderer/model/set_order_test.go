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
