package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const operatorManual = "../../testdata/operator-manual"

// TestOperatorManual: SolAr's operator-manual example, whose Profile in
// k8s-cluster-provider matches the Target of k8s-cluster-user, renders
// cluster-01 with ocm-demo once the grants of SolAr's guide are there.
func TestOperatorManual(t *testing.T) {
	code, stdout, stderr := solar(t, "vet", "--strict", operatorManual)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Equal(t, `../../testdata/operator-manual/grants.yaml:41: spec.from[1].kind: warning: solar does not process RenderArtifact of group "solar.opendefense.cloud": this entry grants nothing here
12 objects valid, 1 warning
`, stderr)

	code, stdout, stderr = solar(t, "render", "-o", "json", "--out", filepath.Join(t.TempDir(), "out"), operatorManual)
	require.Equal(t, 0, code, stderr)
	r := decodeReport(t, stdout)
	require.Len(t, r.Targets, 1)
	assert.Equal(t, "k8s-cluster-user/bootstrap-cluster-01", r.Targets[0].Repository)
	require.Len(t, r.Targets[0].Releases, 1, "the Profile of k8s-cluster-provider binds ocm-demo")
	assert.Equal(t, "k8s-cluster-provider/ocm-demo", r.Targets[0].Releases[0].Release)
	assert.Equal(t, "ocm-demo", r.Targets[0].Releases[0].Key)
}

// TestOperatorManualWithoutProfileGrant: without the grant in
// k8s-cluster-user that lets the provider's Profile match its Targets, the
// Target would get an empty bootstrap chart: vet says so and why, at the
// Profile and at the Target, and --strict fails.
func TestOperatorManualWithoutProfileGrant(t *testing.T) {
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(operatorManual, "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if filepath.Base(f) == "grants.yaml" {
			// Keep only the RegistryBinding entry of the user namespace's grant.
			s := string(b)
			for _, kind := range []string{"Profile", "ReleaseBinding"} {
				entry := "  - group: solar.opendefense.cloud\n    kind: " + kind + "\n    namespace: k8s-cluster-provider\n"
				require.Contains(t, s, entry)
				s = strings.Replace(s, entry, "", 1)
			}
			b = []byte(s)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644))
	}
	t.Chdir(dir)
	why := "no ReferenceGrant in k8s-cluster-user allows Profile from k8s-cluster-provider (add one: from Profile and ReleaseBinding, to Target)"
	code, stdout, stderr := solar(t, "vet", ".")
	assert.Equal(t, 0, code, "warnings: the Target may wait for its first release")
	assert.Empty(t, stdout)
	assert.Equal(t, `grants.yaml:35: spec.from[1].kind: warning: solar does not process RenderArtifact of group "solar.opendefense.cloud": this entry grants nothing here
profile.yaml:14: spec.targetSelector: warning: Profile k8s-cluster-provider/ocm-demo-production matches no Target; Target k8s-cluster-user/cluster-01 has matching labels but `+why+`
target.yaml:9: metadata.name: warning: Target k8s-cluster-user/cluster-01 gets no release: no Profile or ReleaseBinding binds one to it, so its bootstrap chart installs nothing; Profile k8s-cluster-provider/ocm-demo-production matches its labels but `+why+`
12 objects valid, 3 warnings
`, stderr)

	code, _, stderr = solar(t, "vet", "--strict", ".")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "target.yaml:9: metadata.name: Target k8s-cluster-user/cluster-01 gets no release")
	assert.Contains(t, stderr, "profile.yaml:14: spec.targetSelector: Profile k8s-cluster-provider/ocm-demo-production matches no Target")

	code, stdout, stderr = solar(t, "render", "-o", "json", "--out", filepath.Join(dir, "out"), ".")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"message": "Target k8s-cluster-user/cluster-01 gets no release`, "-o json holds the warning too")
}
