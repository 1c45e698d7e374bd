package validate

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
)

const unquotedTag = head + `kind: Release
metadata: {name: app}
spec:
  chart: {repository: ghcr.io/org/charts/app, tag: "1.0.0"}
  values:
    image: {tag: 1.10, pullPolicy: IfNotPresent}
    replicas: 2
    ratio: 0.5
    versions: [1.20, "1.21"]
`

// TestUnquotedNumberInValues: a Release's values are the chart's data, with
// no schema, so a version written without quotes (1.10, read as 1.1) is a
// warning, an error with Strict, at the value's line and column; numbers
// that read as written say nothing. A cache does not hide the warning on the
// next run.
func TestUnquotedNumberInValues(t *testing.T) {
	want := []string{
		`in.yaml:7:13: spec.values.image.tag: warning: 1.10 is a number (read as 1.1): the chart gets 1.1; if it is a version or other text, quote it: tag: "1.10"`,
		`in.yaml:10:16: spec.values.versions[0]: warning: 1.20 is a number (read as 1.2): the chart gets 1.2; if it is a version or other text, quote it: "1.20"`,
	}
	assert.Equal(t, want, vet(t, Options{}, unquotedTag))
	cache := t.TempDir()
	for range 2 {
		assert.Equal(t, want, vet(t, Options{CacheDir: cache}, unquotedTag))
	}

	v, err := New(Options{Strict: true})
	require.NoError(t, err)
	objs, _ := load.Bytes("in.yaml", []byte(unquotedTag), load.Options{})
	set, problems := v.Validate(objs)
	require.Len(t, problems, 2)
	assert.Equal(t, diag.Error, problems[0].Severity)
	assert.Empty(t, set.Releases, "with Strict the Release is invalid")
}

// TestWarningKeepsObject: an object with only warnings is valid: a Target
// whose userdata has a key that looks like a secret is still planned.
func TestWarningKeepsObject(t *testing.T) {
	v, err := New(Options{})
	require.NoError(t, err)
	objs, problems := load.Bytes("in.yaml", []byte(head+"kind: Registry\nmetadata: {name: r}\nspec: {hostname: registry.example.com}\n---\n"+
		head+"kind: Target\nmetadata: {name: t}\nspec:\n  renderRegistryRef: {name: r}\n  userdata: {dbPassword: x}\n"), load.Options{})
	require.Empty(t, problems)
	set, problems := v.Validate(objs)
	require.Len(t, problems, 2) // the userdata key, and no release for the Target
	for _, p := range problems {
		assert.Equal(t, diag.Warning, p.Severity, p.String())
	}
	assert.Contains(t, fmt.Sprint(problems), "spec.userdata.dbPassword: warning: looks like a secret")
	assert.Len(t, set.Targets, 1, "a warning does not drop the Target")
}
