package testenv

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// Plan resolves loaded objects with the default options.
func Plan(t testing.TB, objs []*load.Object) *resolve.Plan {
	t.Helper()
	s, err := model.NewSet(objs)
	require.NoError(t, err)
	p, err := resolve.Resolve(s, resolve.Options{})
	require.NoError(t, err)
	return p
}

// ExamplesPlan resolves examples/ (valid input: vet checks it elsewhere).
func ExamplesPlan(t testing.TB) *resolve.Plan {
	t.Helper()
	objs, problems, _ := load.Paths([]string{filepath.Join(Root(t), "examples")}, load.Options{Namespace: "default"})
	require.Empty(t, problems)
	return Plan(t, objs)
}
