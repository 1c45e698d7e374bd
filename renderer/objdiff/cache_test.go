package objdiff

import (
	"context"
	"io/fs"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/charts"
)

// TestCacheSharesRenders: the same release (chart, values, name and
// namespace) under the bootstrap charts of two Targets renders once per
// diff: a chart that makes a random value at each render shows the same
// change on both, where two renders would differ.
func TestCacheSharesRenders(t *testing.T) {
	web := archive(t, "web", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"templates/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n" +
			"data: {replicas: \"{{ .Values.replicas }}\", nonce: {{ randAlphaNum 16 }}}\n",
	})
	old, new := archive(t, "parent", parent), archive(t, "parent", upgraded(parent))
	cache := NewCache(16)
	var diffs []string
	for range 2 {
		before, after := walkerPair(serve(web, nil), serve(web, nil))
		before.Cache, after.Cache = cache, cache
		changes, err := Changes(context.Background(), before, after, old, new)
		require.NoError(t, err)
		require.Len(t, changes, 2)
		assert.Equal(t, "update ConfigMap apps/web", changes[1].Action+" "+changes[1].Object.String())
		diffs = append(diffs, changes[1].Diff)
	}
	assert.Equal(t, diffs[0], diffs[1], "one render for both Targets")
}

// bootstrapArchive is a bootstrap chart of Solar's templates whose values
// are values.yaml with releases.
func bootstrapArchive(t *testing.T, values map[string]any, releases ...map[string]any) []byte {
	t.Helper()
	files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: bootstrap-edge\nversion: 0.0.1\n"}
	for _, dir := range []string{"bootstrap", "common"} {
		require.NoError(t, fs.WalkDir(charts.FS, dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(charts.FS, path)
			name := path[strings.Index(path, "/")+1:]
			if dir == "common" {
				name = "templates/" + name
			}
			files[name] = string(b)
			return err
		}))
	}
	v := maps.Clone(values)
	list := []any{}
	for _, r := range releases {
		list = append(list, r)
	}
	v["releases"] = list
	b, err := yaml.Marshal(v)
	require.NoError(t, err)
	files["values.yaml"] = string(b)
	return archive(t, "bootstrap-edge", files)
}

// bootstrapValues are a bootstrap chart's values but its releases, every
// option set, and entry is its release i.
var bootstrapValues = map[string]any{
	"interval":      "10m0s",
	"layerSelector": map[string]any{"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip", "operation": "copy"},
	"remediation":   map[string]any{"install": map[string]any{"disableWait": true}},
	"target":        map[string]any{"name": "edge", "namespace": "alpha"},
	"userdata":      map[string]any{},
	"registry":      map[string]any{"pullSecret": "pull", "certSecret": "ca", "insecure": true, "verifySecret": "cosign"},
}

func entry(i int, version string) map[string]any {
	name := map[string]any{"name": "solar-bootstrap-app-" + string(rune('a'+i)), "full": "solar-bootstrap-app-" + string(rune('a'+i))}
	if i == 1 {
		name["name"] = "solar-bootstrap-app-cut"
	}
	return map[string]any{
		"key": "app-" + string(rune('a'+i)), "name": name, "release": "alpha/r", "label": "alpha.r",
		"url": "oci://registry.example.com/alpha/release-r", "version": version,
		"values": map[string]any{"names": map[string]any{"app": map[string]any{"name": "edge-app", "full": "edge-app"}}},
	}
}

// TestBootstrapReleasesRenderAlone holds Solar's bootstrap chart to what
// narrow relies on: each release renders the same objects alone as beside
// the others (no object of the chart depends on two releases).
func TestBootstrapReleasesRenderAlone(t *testing.T) {
	ctx := context.Background()
	all := []map[string]any{entry(0, "0.0.1"), entry(1, "0.0.2"), entry(2, "0.0.3")}
	objs, err := render(ctx, release{archive: bootstrapArchive(t, bootstrapValues, all...), values: map[string]any{}, name: "solar-bootstrap", namespace: "flux-system"}, 1, nil, nil)
	require.NoError(t, err)
	var alone []string
	for _, e := range all {
		o, err := render(ctx, release{archive: bootstrapArchive(t, bootstrapValues, e), values: map[string]any{}, name: "solar-bootstrap", namespace: "flux-system"}, 1, nil, nil)
		require.NoError(t, err)
		for _, x := range o {
			alone = append(alone, raw(x))
		}
	}
	var together []string
	for _, x := range objs {
		together = append(together, raw(x))
	}
	assert.Len(t, together, 6)
	assert.Equal(t, together, alone)
}

// TestNarrowShowsWhatAFullRenderShows: the changes of two bootstrap charts
// are the same narrowed as rendered whole: a release changed, added or
// removed; a value beside the releases changed (not narrowed).
func TestNarrowShowsWhatAFullRenderShows(t *testing.T) {
	other := maps.Clone(bootstrapValues)
	other["registry"] = map[string]any{"pullSecret": "pull", "certSecret": "", "insecure": false, "verifySecret": ""}
	a, b, c := entry(0, "0.0.1"), entry(1, "0.0.1"), entry(2, "0.0.1")
	for name, pair := range map[string][2][]byte{
		"one changed": {bootstrapArchive(t, bootstrapValues, a, b, c), bootstrapArchive(t, bootstrapValues, a, entry(1, "0.0.2"), c)},
		"one added":   {bootstrapArchive(t, bootstrapValues, a, c), bootstrapArchive(t, bootstrapValues, a, b, c)},
		"one removed": {bootstrapArchive(t, bootstrapValues, a, b, c), bootstrapArchive(t, bootstrapValues, c, a)},
		"registry":    {bootstrapArchive(t, bootstrapValues, a, b), bootstrapArchive(t, other, a, b)},
	} {
		t.Run(name, func(t *testing.T) {
			w := &Walker{FluxNamespace: "flux-system"}
			rs := [2]*release{root(pair[0], w), root(pair[1], w)}
			whole, err := walkPair(context.Background(), walkers{w, w}, docs{}, rs, 1)
			require.NoError(t, err)
			want, err := Compare(whole[0], whole[1])
			require.NoError(t, err)
			got, err := Changes(context.Background(), w, w, pair[0], pair[1])
			require.NoError(t, err)
			assert.NotEmpty(t, got)
			assert.Equal(t, want, got)
		})
	}
}

// TestChangesNarrowToChangedReleases: a release whose entry is the same in
// both bootstrap charts shows no change, whatever its templates make at
// each render; the release that changed shows.
func TestChangesNarrowToChangedReleases(t *testing.T) {
	tmpl := "{{- range .Values.releases }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .key }}}\n" +
		"data: {version: {{ .version | quote }}, nonce: {{ randAlphaNum 16 }}}\n{{- end }}\n"
	chart := func(versions ...string) []byte {
		list := "releases:\n"
		for i, v := range versions {
			list += "- {key: app-" + string(rune('a'+i)) + ", version: \"" + v + "\"}\n"
		}
		return archive(t, "bootstrap-edge", map[string]string{
			"Chart.yaml": "apiVersion: v2\nname: bootstrap-edge\nversion: 0.0.1\n", "values.yaml": list, "templates/r.yaml": tmpl,
		})
	}
	w := &Walker{FluxNamespace: "flux-system"}
	changes, err := Changes(context.Background(), w, w, chart("1", "1", "1"), chart("1", "2", "1"))
	require.NoError(t, err)
	require.Len(t, changes, 1)
	assert.Equal(t, "update ConfigMap flux-system/app-b", changes[0].Action+" "+changes[0].Object.String())
}
