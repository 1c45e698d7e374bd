package artifacts_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/artifacts"
	"github.com/solar-pipeline/solar/renderer/objdiff"
)

// objects decodes YAML documents as an application chart renders them in
// namespace "apps".
func objects(t testing.TB, docs ...string) []objdiff.Object {
	t.Helper()
	var out []objdiff.Object
	for _, d := range docs {
		objs, err := objdiff.Decode(d, 3, "apps")
		require.NoError(t, err)
		out = append(out, objs...)
	}
	return out
}

const cronJob = `apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          initContainers: [{name: init, image: busybox}]
          containers: [{name: run, image: "registry.example.com/tools/backup:1.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]
`

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: web, image: "ghcr.io/example/web:1.0"}, {name: proxy, image: "busybox"}]
      ephemeralContainers: [{name: debug, image: "ghcr.io/example/debug:2"}]
`

// TestImagesOfEveryWorkload: the images of init, app and ephemeral
// containers of a CronJob and a Deployment, in order, a digest where the
// reference carries one; a ConfigMap names none.
func TestImagesOfEveryWorkload(t *testing.T) {
	images, problems := artifacts.Images("chart", objects(t, cronJob, deployment, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {image: nginx}\n"))
	require.Empty(t, problems)
	var refs []string
	for _, im := range images {
		refs = append(refs, im.Reference)
	}
	assert.Equal(t, []string{"busybox", "registry.example.com/tools/backup:1.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"ghcr.io/example/web:1.0", "busybox", "ghcr.io/example/debug:2"}, refs)
	assert.Equal(t, "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", images[1].Digest)
	assert.Equal(t, "spec.jobTemplate.spec.template.spec.initContainers[0].image", images[0].Path)
	assert.Equal(t, "CronJob apps/backup", images[0].Object)
}

// TestImageThatDoesNotParse: a bad reference and a container without an
// image are problems naming the chart, the object and the field, all of
// them; the good image of the same Pod is still listed.
func TestImageThatDoesNotParse(t *testing.T) {
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: 'Example.com/UPPER:tag'}, {name: b}, {name: c, image: nginx:1.27}]\n"
	images, problems := artifacts.Images("ghcr.io/example/charts/app:1.0.0", objects(t, pod))
	require.Len(t, images, 1)
	assert.Equal(t, "nginx:1.27", images[0].Reference)
	require.Len(t, problems, 2)
	assert.Contains(t, problems[0].String(), `ghcr.io/example/charts/app:1.0.0: Pod apps/p: spec.containers[0].image: image "Example.com/UPPER:tag" does not parse`)
	assert.Equal(t, "ghcr.io/example/charts/app:1.0.0: Pod apps/p: spec.containers[1].image: a container without an image", problems[1].String())
}

// TestCollectorListsEachOnce: an artifact many Targets need is listed once
// with all of them, sorted; a digest learned later is kept; the list is
// ordered by kind, then reference; a chart's problem is said once.
func TestCollectorListsEachOnce(t *testing.T) {
	var c artifacts.Collector
	bad := objects(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a}]\n")
	for _, target := range []string{"b/two", "a/one"} {
		c.Objects(target, "ghcr.io/example/charts/web:1.0", objects(t, deployment))
		c.Chart(target, artifacts.KindChart, "ghcr.io/example/charts/web:1.0", "")
		c.Chart(target, artifacts.KindBootstrap, "registry.example.com/"+target, "")
		c.Objects(target, "ghcr.io/example/charts/bad:1.0", bad)
	}
	c.Chart("a/one", artifacts.KindChart, "ghcr.io/example/charts/web:1.0", "sha256:abc")
	c.Chart("b/two", artifacts.KindChart, "ghcr.io/example/charts/web:1.0", "") // again, not after itself
	l := c.List()
	var got []string
	for _, a := range l.Artifacts {
		got = append(got, a.Kind+" "+a.Reference)
	}
	assert.Equal(t, []string{
		"bootstrap-chart registry.example.com/a/one", "bootstrap-chart registry.example.com/b/two",
		"chart ghcr.io/example/charts/web:1.0",
		"image busybox", "image ghcr.io/example/debug:2", "image ghcr.io/example/web:1.0",
	}, got)
	assert.Equal(t, "sha256:abc", l.Artifacts[2].Digest)
	assert.Equal(t, []string{"a/one", "b/two"}, l.Artifacts[2].Targets)
	assert.Equal(t, []string{"ghcr.io/example/charts/web:1.0"}, l.Artifacts[3].Charts)
	assert.Len(t, l.Problems, 1)
	assert.True(t, l.Problems.HasErrors())
	assert.Equal(t, 3, l.Count(artifacts.KindImage))
}

// BenchmarkCollectorOneImageEveryTarget: 100,000 Targets need the same
// chart and image (a Release every Target gets): each Target added once,
// not searched for among those before it.
func BenchmarkCollectorOneImageEveryTarget(b *testing.B) {
	objs := objects(b, deployment)
	for b.Loop() {
		var c artifacts.Collector
		for i := range 100000 {
			target := fmt.Sprintf("ns-%d/edge-%d", i/100, i)
			c.Chart(target, artifacts.KindChart, "ghcr.io/example/charts/web:1.0", "")
			c.Objects(target, "ghcr.io/example/charts/web:1.0", objs)
		}
		if l := c.List(); len(l.Artifacts[0].Targets) != 100000 {
			b.Fatal(len(l.Artifacts[0].Targets))
		}
	}
}
