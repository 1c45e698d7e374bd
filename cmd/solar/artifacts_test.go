package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/artifacts"
	"github.com/solar-pipeline/solar/renderer/mirror"
)

// pushAppChart packs the chain test's application chart (a Deployment of
// image example.invalid/solar-test/<name>:<appVersion>) as name at version
// with the real helm CLI and pushes it to an anonymous plain-HTTP registry
// under path, as ghcr.io serves the examples' charts; it returns the
// manifest digest the registry holds.
func pushAppChart(t *testing.T, host, path, name, version, appVersion string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, name), os.DirFS("chaintest/testdata/app")))
	chartYAML := fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\nappVersion: %q\n", name, version, appVersion)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name, "Chart.yaml"), []byte(chartYAML), 0o644))
	helm := testenv.Tool(t, "helm")
	for _, args := range [][]string{
		{"package", filepath.Join(dir, name), "-d", dir},
		{"push", filepath.Join(dir, name+"-"+version+".tgz"), "oci://" + host + "/" + path, "--plain-http"},
	} {
		cmd := exec.Command(helm, args...)
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+dir, "HELM_CACHE_HOME="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "helm %v: %s", args, out)
	}
	repo, err := remote.NewRepository(host + "/" + path + "/" + name)
	require.NoError(t, err)
	repo.PlainHTTP = true
	desc, err := repo.Resolve(context.Background(), version)
	require.NoError(t, err)
	return desc.Digest.String()
}

// pointExamples makes host, an anonymous plain-HTTP registry, the source
// registry (ghcr.io) of the examples in dir.
func pointExamples(t *testing.T, examples, host string) {
	t.Helper()
	for _, f := range []string{"shared/registries.yaml", "shared/components.yaml", "shared/pipeline.yaml", "alpha/releases.yaml"} {
		p := filepath.Join(examples, f)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		s := strings.ReplaceAll(string(b), "ghcr.io", host)
		s = strings.Replace(s, "  hostname: "+host+"\n", "  hostname: "+host+"\n  plainHTTP: true\n", 1)
		s = strings.Replace(s, "  registries:\n", "  registries:\n    allowInsecure: true\n", 1)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
}

// byReference is the artifact of kind at reference in l.
func byReference(t *testing.T, l artifacts.List, kind, reference string) artifacts.Artifact {
	t.Helper()
	for _, a := range l.Artifacts {
		if a.Kind == kind && a.Reference == reference {
			return a
		}
	}
	require.Failf(t, "not listed", "%s %s in %+v", kind, reference, l.Artifacts)
	return artifacts.Artifact{}
}

// TestArtifactsOfExamples: solar artifacts on examples/, their application
// charts in a real registry, lists podinfo's chart at the digest the
// registry holds with the Targets that install it, and the image its
// Deployment names, once, with the same Targets; Solar's charts by
// repository (nothing is published); an image reference that does not
// parse is an error naming the chart.
func TestArtifactsOfExamples(t *testing.T) {
	source := testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true})
	digests := map[string]string{}
	for _, c := range []struct{ path, name, version string }{
		{"stefanprodan/charts", "podinfo", "6.7.0"},
		{"stefanprodan/charts", "podinfo", "6.8.0"},
		{"prometheus-community/charts", "prometheus-node-exporter", "4.47.0"},
	} {
		digests[c.name+":"+c.version] = pushAppChart(t, source.Host, c.path, c.name, c.version, c.version)
	}
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	pointExamples(t, examples, source.Host)

	code, stdout, stderr := solar(t, "artifacts", "-o", "json", examples)
	require.Equal(t, 0, code, stderr)
	var l artifacts.List
	require.NoError(t, json.Unmarshal([]byte(stdout), &l), stdout)
	podinfo := byReference(t, l, artifacts.KindChart, source.Host+"/stefanprodan/charts/podinfo:6.7.0")
	assert.Equal(t, digests["podinfo:6.7.0"], podinfo.Digest)
	assert.Equal(t, []string{"alpha/edge-1", "beta/plant-1", "beta/plant-2"}, podinfo.Targets)
	canary := byReference(t, l, artifacts.KindChart, source.Host+"/stefanprodan/charts/podinfo:6.8.0")
	assert.Equal(t, digests["podinfo:6.8.0"], canary.Digest)
	assert.Equal(t, []string{"alpha/edge-2"}, canary.Targets)
	image := byReference(t, l, artifacts.KindImage, "example.invalid/solar-test/podinfo:6.7.0")
	assert.Equal(t, podinfo.Targets, image.Targets)
	assert.Equal(t, []string{source.Host + "/stefanprodan/charts/podinfo:6.7.0"}, image.Charts)
	byReference(t, l, artifacts.KindImage, "example.invalid/solar-test/prometheus-node-exporter:4.47.0")
	boot := byReference(t, l, artifacts.KindBootstrap, "registry.example.com/alpha/bootstrap-edge-1")
	assert.Empty(t, boot.Digest, "not published: by repository alone")
	assert.Equal(t, 1, strings.Count(stdout, `"reference": "example.invalid/solar-test/podinfo:6.7.0"`), "each artifact once")
	assert.Empty(t, l.Problems.Sorted().Count("error"))

	code, stdout, stderr = solar(t, "artifacts", "-n", "beta", examples)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^KIND +REFERENCE +DIGEST +TARGETS$`, stdout)
	assert.Regexp(t, `(?m)^image +example\.invalid/solar-test/podinfo:6\.7\.0 +- +beta/plant-1,beta/plant-2$`, stdout)
	assert.NotContains(t, stdout, "alpha/edge")
	assert.Contains(t, stderr, "2 bootstrap charts")

	// podinfo 6.8.0 again, its image reference broken.
	pushAppChart(t, source.Host, "stefanprodan/charts", "podinfo", "6.8.0", "6.8.0 beta")
	code, stdout, stderr = solar(t, "artifacts", examples)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, source.Host+"/stefanprodan/charts/podinfo:6.8.0: Deployment podinfo/podinfo-edge-2-podinfo: spec.template.spec.containers[0].image: image \"example.invalid/solar-test/podinfo:6.8.0 beta\" does not parse")
	assert.Contains(t, stdout, "podinfo:6.7.0", "the list is still printed")
}

// TestArtifactsWithMirror: with the PipelineConfig's mirror, the release
// charts point at the site's copies, which cannot be reached here;
// artifacts still reads the application charts from their source (their
// digests, their images), lists each by its source reference, and gives
// each chart and image its site reference (-o json "site", -o wide SITE).
func TestArtifactsWithMirror(t *testing.T) {
	examples, source, digest := mirroredExamples(t)
	const site = mirrorSite

	code, stdout, stderr := solar(t, "artifacts", "-n", "beta", "-o", "json", examples)
	require.Equal(t, 0, code, stderr)
	var l artifacts.List
	require.NoError(t, json.Unmarshal([]byte(stdout), &l), stdout)
	podinfo := byReference(t, l, artifacts.KindChart, source.Host+"/stefanprodan/charts/podinfo:6.7.0")
	assert.Equal(t, digest, podinfo.Digest, "read from the source")
	// Where push puts it: package mirror's rule.
	copied, err := mirror.Reference(site+"/mirror", podinfo.Reference)
	require.NoError(t, err)
	assert.Equal(t, copied, podinfo.Site)
	assert.True(t, strings.HasPrefix(podinfo.Site, site+"/mirror/"), podinfo.Site)
	image := byReference(t, l, artifacts.KindImage, "example.invalid/solar-test/podinfo:6.7.0")
	assert.Equal(t, site+"/mirror/example.invalid/solar-test/podinfo:6.7.0", image.Site)
	assert.Equal(t, []string{source.Host + "/stefanprodan/charts/podinfo:6.7.0"}, image.Charts, "named by the source reference")
	boot := byReference(t, l, artifacts.KindBootstrap, "registry.example.com/beta/bootstrap-plant-1")
	assert.Empty(t, boot.Site, "Solar's charts are in the render registry")
	assert.Empty(t, l.Notes, "every chart was read")

	code, stdout, stderr = solar(t, "artifacts", "-n", "beta", "-o", "wide", examples)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^KIND +REFERENCE +SITE +DIGEST +TARGETS$`, stdout)
	assert.Regexp(t, `(?m)^image +example\.invalid/solar-test/podinfo:6\.7\.0 +`+regexp.QuoteMeta(site)+`/mirror/example\.invalid/solar-test/podinfo:6\.7\.0 +- +beta/plant-1,beta/plant-2$`, stdout)
	assert.Regexp(t, `(?m)^bootstrap-chart +registry\.example\.com/beta/bootstrap-plant-1 +- +- +beta/plant-1$`, stdout)
}

// mirrorSite is the mirror of mirroredExamples: a registry that cannot be
// reached.
const mirrorSite = "site.invalid:5000"

// mirroredExamples is a copy of examples/ whose application charts are in
// a real registry (source) and whose PipelineConfig mirrors them into
// mirrorSite; digest is podinfo 6.7.0's.
func mirroredExamples(t *testing.T) (examples string, source *testenv.Registry, digest string) {
	t.Helper()
	source = testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true})
	digest = pushAppChart(t, source.Host, "stefanprodan/charts", "podinfo", "6.7.0", "6.7.0")
	pushAppChart(t, source.Host, "prometheus-community/charts", "prometheus-node-exporter", "4.47.0", "4.47.0")
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples = filepath.Join(dir, "examples")
	pointExamples(t, examples, source.Host)
	for file, edit := range map[string][2]string{
		"pipeline.yaml": {"    allowedHostnames:\n", "    mirror:\n      registryRef:\n        name: site\n    allowedHostnames:\n      - " + mirrorSite + "\n"},
		"registries.yaml": {"  targetPullSecretName: render-pull\n", "  targetPullSecretName: render-pull\n---\napiVersion: solar.opendefense.cloud/v1alpha1\n" +
			"kind: Registry\nmetadata:\n  name: site\n  namespace: shared\nspec:\n  hostname: " + mirrorSite + "\n"},
	} {
		p := filepath.Join(examples, "shared", file)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(b), edit[0])
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), edit[0], edit[1], 1)), 0o644))
	}
	return examples, source, digest
}
