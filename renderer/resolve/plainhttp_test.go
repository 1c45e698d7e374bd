package resolve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// registries is a set of n Registries, one a namespace, the last over
// plain HTTP.
func registries(t testing.TB, n int) *model.Set {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Registry\nmetadata: {name: r, namespace: ns-%d}\nspec: {hostname: reg-%d.example.com, plainHTTP: %t}\n", i, i, i == n-1)
	}
	objs, problems := load.Bytes("in.yaml", []byte(b.String()), load.Options{})
	require.Empty(t, problems)
	s, err := model.NewSet(objs)
	require.NoError(t, err)
	return s
}

// TestPlainHTTP: a repository is plain HTTP where a Registry of its host
// says so, and not where one of another host does.
func TestPlainHTTP(t *testing.T) {
	s := registries(t, 3)
	assert.True(t, plainHTTP(s, "reg-2.example.com/charts/app"))
	assert.False(t, plainHTTP(s, "reg-1.example.com/charts/app"))
	assert.False(t, plainHTTP(s, "reg-2.example.com:5000/charts/app"))
}

// BenchmarkPlainHTTP: 1,000 Registries (one a namespace), asked for each
// release of 100,000 Targets (500,000): a set of hosts, not a scan of the
// Registries per release.
func BenchmarkPlainHTTP(b *testing.B) {
	s := registries(b, 1000)
	for b.Loop() {
		for i := range 500000 {
			if plainHTTP(s, "reg-1.example.com/charts/app") {
				b.Fatal(i)
			}
		}
	}
}
