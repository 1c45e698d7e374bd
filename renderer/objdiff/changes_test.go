package objdiff

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walkerPair are a before and an after Walker whose application chart reads
// come from before and after.
func walkerPair(before, after func(context.Context, Ref) ([]byte, error)) (*Walker, *Walker) {
	return &Walker{FluxNamespace: "flux-system", App: before}, &Walker{FluxNamespace: "flux-system", App: after}
}

func serve(b []byte, err error) func(context.Context, Ref) ([]byte, error) {
	return func(context.Context, Ref) ([]byte, error) { return b, err }
}

// TestChangesLeaveOutWhatDidNotRender: an application chart read on one
// side only is not shown as deleted (nor created): its subtree is left out
// of both sides, and a note says why.
func TestChangesLeaveOutWhatDidNotRender(t *testing.T) {
	web := archive(t, "web", map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"templates/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
	})
	before, after := walkerPair(serve(web, nil), serve(nil, errors.New("i/o timeout")))
	changes, err := Changes(context.Background(), before, after, archive(t, "parent", parent), archive(t, "parent", upgraded(parent)))
	require.NoError(t, err)
	require.Len(t, changes, 1, "the HelmRelease's change, no Deployment deleted")
	assert.Equal(t, "update HelmRelease flux-system/web", changes[0].Action+" "+changes[0].Object.String())
	require.Len(t, after.Notes, 1)
	assert.Contains(t, after.Notes[0].Reason, "i/o timeout")
}

// upgraded is a parent chart whose HelmRelease passes other values.
func upgraded(parent map[string]string) map[string]string {
	other := map[string]string{}
	for k, v := range parent {
		other[k] = strings.Replace(v, "values: {replicas: 2}", "values: {replicas: 3}", 1)
	}
	return other
}

// TestChangesLeaveOutReleasesNotUpgraded: a HelmRelease installed from the
// same inputs on both sides is not upgraded by helm-controller: what its
// chart generates at each render (a CA) is no change.
func TestChangesLeaveOutReleasesNotUpgraded(t *testing.T) {
	web := archive(t, "web", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"templates/d.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ca}\n" +
			"data: {ca: {{ (genCA \"web\" 365).Cert | b64enc }}}\n",
	})
	p := archive(t, "parent", parent)
	before, after := walkerPair(serve(web, nil), serve(web, nil))
	changes, err := Changes(context.Background(), before, after, p, p)
	require.NoError(t, err)
	assert.Empty(t, changes)

	// The same chart upgraded (other values): its objects show.
	changes, err = Changes(context.Background(), before, after, p, archive(t, "parent", upgraded(parent)))
	require.NoError(t, err)
	var got []string
	for _, c := range changes {
		got = append(got, c.Action+" "+c.Object.String())
	}
	assert.Equal(t, []string{"update HelmRelease flux-system/web", "update ConfigMap apps/ca"}, got)
}

// TestRenderAsHelmInstalls: a subchart its condition turns off is left out;
// a List is its items; a Cluster... kind has no namespace; an application
// chart's values schema is not checked (its $refs would be read here); a
// render that loops is abandoned.
func TestRenderAsHelmInstalls(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits++
		_, _ = w.Write([]byte(`{"type":"object"}`))
	}))
	defer srv.Close()
	app := archive(t, "web", map[string]string{
		"Chart.yaml":                 "apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n- name: db\n  version: 1.0.0\n  condition: db.enabled\n",
		"values.yaml":                "db:\n  enabled: false\n",
		"values.schema.json":         `{"$ref":"` + srv.URL + `/internal"}`,
		"templates/l.yaml":           "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
		"templates/c.yaml":           "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: le}\n",
		"charts/db/Chart.yaml":       "apiVersion: v2\nname: db\nversion: 1.0.0\n",
		"charts/db/templates/s.yaml": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\n",
	})
	objs, err := render(context.Background(), release{archive: app, values: map[string]any{}, name: "web", namespace: "apps", app: true}, 3, nil, nil)
	require.NoError(t, err)
	var got []string
	for _, o := range objs {
		got = append(got, o.String())
	}
	assert.ElementsMatch(t, []string{"ClusterIssuer le", "ConfigMap apps/a"}, got)
	assert.Zero(t, hits, "no $ref of an application chart's schema is fetched")

	defer func(d time.Duration) { renderTimeout = d }(renderTimeout)
	renderTimeout = 200 * time.Millisecond
	loop := archive(t, "web", map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"templates/d.yaml": `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`,
	})
	start := time.Now()
	_, err = render(context.Background(), release{archive: loop, values: map[string]any{}, name: "web", namespace: "apps", app: true}, 3, nil, nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}
