package artifacts_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/solar-pipeline/solar/renderer/artifacts"
)

// TestSite: with a Mirror, each application chart and image also names its
// copy in the site's registry (package mirror's rule: the source host kept,
// tag and digest kept, Docker Hub's short names expanded); Solar's charts,
// in the render registry, have none. Without a Mirror, none has one.
func TestSite(t *testing.T) {
	collect := func(mirror string) map[string]string {
		c := artifacts.Collector{Mirror: mirror}
		c.Chart("a/t", artifacts.KindBootstrap, "render.example/a/bootstrap-t:0.0.1", "sha256:1")
		c.Chart("a/t", artifacts.KindRelease, "render.example/a/a/release-web", "")
		c.Chart("a/t", artifacts.KindChart, "ghcr.io/stefanprodan/charts/podinfo:6.7.0", "sha256:2")
		c.Objects("a/t", "ghcr.io/stefanprodan/charts/podinfo:6.7.0", objects(t, cronJob))
		site := map[string]string{}
		for _, a := range c.List().Artifacts {
			site[a.Reference] = a.Site
		}
		return site
	}
	assert.Equal(t, map[string]string{
		"render.example/a/bootstrap-t:0.0.1":        "",
		"render.example/a/a/release-web":            "",
		"ghcr.io/stefanprodan/charts/podinfo:6.7.0": "site.example:5000/mirror/ghcr.io/stefanprodan/charts/podinfo:6.7.0",
		"busybox": "site.example:5000/mirror/docker.io/library/busybox:latest",
		"registry.example.com/tools/backup:1.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": "site.example:5000/mirror/registry.example.com/tools/backup:1.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	}, collect("site.example:5000/mirror"))
	for ref, site := range collect("") {
		assert.Empty(t, site, ref)
	}
}
