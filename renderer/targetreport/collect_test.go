package targetreport

import (
	"testing"

	"github.com/solar-pipeline/solar/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// named gives o a namespace, name, labels, annotations and (a bootstrap
// chart's HelmRelease) values naming the application pair.
func named(o Object, name, target, release, app string) Object {
	m := o["metadata"].(map[string]any)
	m["namespace"], m["name"] = "flux-system", name
	m["annotations"] = map[string]any{api.AnnotationRelease: release}
	if target != "" {
		m["labels"] = map[string]any{api.LabelTarget: target}
	}
	if app != "" {
		o["spec"] = map[string]any{"values": map[string]any{"names": map[string]any{"app": map[string]any{"name": app}}}}
	}
	return o
}

func withHistory(o Object, version string) Object {
	o["status"].(map[string]any)["history"] = []any{map[string]any{"chartVersion": version}}
	return o
}

// TestCollect: a Target's releases from the two pairs each has, its
// neighbour's left out.
func TestCollect(t *testing.T) {
	ok := func() Object { return hr(1, [4]any{"Ready", "True", "Succeeded", int64(1)}) }
	failing := hr(2, [4]any{"Ready", "False", "InstallFailed", int64(2)}, [4]any{"Stalled", "True", "RetriesExceeded", int64(2)})
	sources := []Object{
		named(ok(), "edge-1-web", "edge-1", "apps/web", ""),
		named(ok(), "edge-1-web-app", "", "apps/web", ""),
		named(ok(), "edge-1-db", "edge-1", "apps/db", ""),
		named(ok(), "edge-1-db-app", "", "apps/db", ""),
		named(ok(), "edge-1-mon", "edge-1", "ops/mon", ""),
		named(ok(), "edge-2-web", "edge-2", "apps/web", ""),
	}
	helms := []Object{
		withHistory(named(ok(), "edge-1-web", "edge-1", "apps/web", "edge-1-web-app"), "0.0.3"),
		named(ok(), "edge-1-web-app", "", "apps/web", ""),
		withHistory(named(ok(), "edge-1-db", "edge-1", "apps/db", "edge-1-db-app"), "0.0.1"),
		named(failing, "edge-1-db-app", "", "apps/db", ""),
		withHistory(named(ok(), "edge-1-mon", "edge-1", "ops/mon", "edge-1-mon-app"), "0.0.7"),
		named(ok(), "edge-2-web", "edge-2", "apps/web", "edge-2-web-app"),
	}
	got := Collect("apps", "edge-1", sources, helms)
	require.Len(t, got, 3)
	assert.Equal(t, Release{Name: "db", Namespace: "flux-system", Phase: Failed, Revision: "0.0.1",
		SourceConditions: Conditions(sources[3]), HelmConditions: Conditions(failing)}, got[0])
	assert.Equal(t, "ops/mon", got[1].Name, "a Release of another namespace than the Target's")
	assert.Equal(t, Progressing, got[1].Phase, "the release chart is installed, the application pair not yet there")
	assert.Equal(t, "0.0.7", got[1].Revision)
	assert.Equal(t, Conditions(helms[4]), got[1].HelmConditions, "until then, the first pair's conditions")
	assert.Equal(t, "web", got[2].Name)
	assert.Equal(t, Ready, got[2].Phase)
	assert.Equal(t, "0.0.3", got[2].Revision)
}
