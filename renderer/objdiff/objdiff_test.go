package objdiff

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func testObject(t testing.TB, level int, doc string) Object {
	t.Helper()
	objs, err := decode(doc, level, "flux-system")
	require.NoError(t, err)
	require.Len(t, objs, 1)
	return objs[0]
}

// TestCompareMasksSecrets: a Secret's values, and tokens and passwords
// anywhere, show as fingerprints; a changed value still shows as a change.
func TestCompareMasksSecrets(t *testing.T) {
	old := []Object{
		testObject(t, 2, "apiVersion: v1\nkind: Secret\nmetadata: {name: cred}\nstringData: {values.yaml: 'token: old-secret-token'}\n"),
		testObject(t, 2, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone}\ndata: {a: b}\n"),
	}
	new := []Object{
		testObject(t, 2, "apiVersion: v1\nkind: Secret\nmetadata: {name: cred}\nstringData: {values.yaml: 'token: new-secret-token'}\n"),
		testObject(t, 2, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {password: hunter2-secret}\n"),
	}
	changes, err := Compare(old, new)
	require.NoError(t, err)
	require.Len(t, changes, 3)
	assert.Equal(t, []string{"update Secret flux-system/cred", "create ConfigMap flux-system/cfg", "delete ConfigMap flux-system/gone"},
		[]string{changes[0].Action + " " + changes[0].Object.String(), changes[1].Action + " " + changes[1].Object.String(), changes[2].Action + " " + changes[2].Object.String()})
	for _, c := range changes {
		assert.NotContains(t, c.Diff, "secret-token")
		assert.NotContains(t, c.Diff, "hunter2")
	}
	assert.Contains(t, changes[0].Diff, "-  values.yaml: <redacted sha256:")
	assert.Contains(t, changes[1].Diff, "+  password: <redacted sha256:")
}

// TestValuesAsHelmControllerMerges: valuesFrom in order, then spec.values
// on top, maps merged key by key (fluxcd/pkg chartutil); an optional
// reference that is missing is left out.
func TestValuesAsHelmControllerMerges(t *testing.T) {
	siblings := []Object{
		testObject(t, 2, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {values.yaml: \"ui: {message: a, color: red}\\nreplicaCount: 1\"}\n"),
		testObject(t, 2, "apiVersion: v1\nkind: Secret\nmetadata: {name: b}\ndata: {values.yaml: "+"dWk6IHttZXNzYWdlOiBifQ=="+"}\n"),
	}
	var spec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(`
valuesFrom:
  - {kind: ConfigMap, name: a}
  - {kind: Secret, name: b}
  - {kind: Secret, name: missing, optional: true}
values: {replicaCount: 3}
`), &spec))
	v, _, err := valuesOf(spec, "flux-system", siblings)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"ui": map[string]any{"message": fingerprint("b"), "color": "red"}, "replicaCount": float64(3)}, v,
		"a Secret's strings as fingerprints")

	spec["valuesFrom"] = append(spec["valuesFrom"].([]any), map[string]any{"kind": "ConfigMap", "name": "nope"})
	_, _, err = valuesOf(spec, "flux-system", siblings)
	assert.ErrorContains(t, err, "valuesFrom ConfigMap nope is not in the same chart")
}

// TestCompareSaysWhatAHelmReleaseWaitsFor: a HelmRelease created or
// updated with spec.dependsOn names what helm-controller installs it after;
// one without, or another kind, names nothing.
func TestCompareSaysWhatAHelmReleaseWaitsFor(t *testing.T) {
	hr := func(name, deps string) Object {
		return testObject(t, 2, "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: "+name+"}\nspec: {interval: 10m"+deps+"}\n")
	}
	old := []Object{hr("shop", "")}
	new := []Object{
		hr("shop", ", dependsOn: [{name: edge-1-cert-manager}, {name: db, namespace: other}]"),
		hr("cert-manager", ""),
		testObject(t, 2, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\nspec: {dependsOn: [{name: x}]}\n"),
	}
	changes, err := Compare(old, new)
	require.NoError(t, err)
	require.Len(t, changes, 3)
	assert.Equal(t, []string{"edge-1-cert-manager", "other/db"}, changes[0].WaitsFor)
	assert.Contains(t, changes[0].Diff, "+  dependsOn:")
	assert.Nil(t, changes[1].WaitsFor)
	assert.Nil(t, changes[2].WaitsFor)
}
