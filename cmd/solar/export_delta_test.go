package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggcrremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/archive"
)

// TestExportDelta (issue 52, done-when 2): the site pushed a first archive
// of examples/ with its dependencies and sent back what its registry holds
// (export-reports --registry, import-reports); a Release then moves to a
// new application chart that runs a new image of 3 MiB. The export
// relative to the site carries only the charts that changed (the release
// chart and the bootstrap chart of the one Target it reaches) and the new
// chart and image, and leaves out the rest. Split into parts of 1 MiB, a
// damaged part and a missing part are each refused before a write; the
// whole set then pushes, and the site holds the new image.
func TestExportDelta(t *testing.T) {
	needRegistry(t)
	w := newDepsWorld(t)
	w.pushIndex(t)
	api := testenv.StartAPIServer(t)
	login := []string{"--registry", w.site.Host + "/solar", "--ca-file", w.site.CAFile, "--username", w.site.Username, "--password-stdin"}
	out, reports := filepath.Join(w.dir, "out"), filepath.Join(w.dir, "reports")
	// run runs solar, wants the exit code want and returns stdout, stderr.
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := w.cli(args...)
		require.Equal(t, want, code, "solar %s:\n%s", strings.Join(args, " "), stderr)
		return stdout, stderr
	}
	run(0, append([]string{"render", "--no-credentials", "--out", out, w.examples}, login...)...)
	first := filepath.Join(w.dir, "first.tar")
	run(0, "export", out, w.examples, "--with-dependencies", "--out", first)
	run(0, append([]string{"push", first}, login...)...)

	// The way back: what the site's registry holds, confirmed.
	key, pub := writeKey(t, w.dir, "site")
	back := filepath.Join(w.dir, "north.tar")
	run(0, "export-reports", "--site", "north", "--signing-key", key, "--out", back, "--kubeconfig", api.Kubeconfig,
		"--registry", w.site.Host, "--ca-file", w.site.CAFile, "--username", w.site.Username, "--password-stdin")
	run(0, "import-reports", back, "--key", pub, "--into", reports)
	same := filepath.Join(w.dir, "same.tar")
	_, stderr := run(1, "export", out, w.examples, "--with-dependencies", "--site", "north", "--reports", reports, "--out", same)
	assert.Contains(t, stderr, "nothing to carry: the other side holds every version and dependency")
	assert.NoFileExists(t, same, "nothing changed since: nothing written")

	image2, img := w.moveToNewImage(t)
	run(0, append([]string{"render", "--no-credentials", "--out", out, w.examples}, login...)...)

	// The delta, split into parts of 1 MiB.
	media := filepath.Join(w.dir, "media")
	require.NoError(t, os.Mkdir(media, 0o700))
	delta := filepath.Join(media, "delta.tar")
	stdout, _ := run(0, "export", out, w.examples, "--with-dependencies", "--site", "north", "--reports", reports,
		"--out", delta, "--split", "1MiB", "-o", "json")
	var s struct {
		archive.Summary
		Parts []archive.Part `json:"parts"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &s), stdout)
	versions, deps := carried(s.Summary)
	assert.Equal(t, []string{"alpha/alpha/release-podinfo-stable", "alpha/bootstrap-edge-1"}, versions,
		"the release chart that changed and the bootstrap chart of the one Target it reaches")
	assert.Equal(t, []string{w.source.Host + "/stefanprodan/charts/podinfo:6.9.0", image2}, deps, "the new chart and its new image")
	assert.Contains(t, s.LeftOut, w.source.Host+"/stefanprodan/charts/podinfo:6.7.0", "what the site holds is left out")
	assert.Contains(t, s.LeftOut, "beta/bootstrap-plant-1:0.0.1")
	require.GreaterOrEqual(t, len(s.Parts), 3, "3 MiB in parts of 1 MiB")

	// A damaged part, then a missing one: refused, the site untouched.
	list := delta + archive.ListSuffix
	part := s.Parts[1].Name
	good, err := os.ReadFile(part)
	require.NoError(t, err)
	bad := slices.Clone(good)
	bad[len(bad)/2] ^= 0xff
	require.NoError(t, os.WriteFile(part, bad, 0o600))
	_, stderr = run(1, append([]string{"push", list}, login...)...)
	assert.Contains(t, stderr, filepath.Base(part)+": its sha256 is")
	require.NoError(t, os.Remove(part))
	_, stderr = run(1, append([]string{"push", list}, login...)...)
	assert.Contains(t, stderr, filepath.Base(part))
	relocated := w.site.Host + "/mirror/" + strings.ReplaceAll(w.source.Host, ":", "_") + "/solar-test/app:2.0"
	_, err = w.siteHead(t, relocated)
	assert.Error(t, err, "nothing of the delta reached the site")

	require.NoError(t, os.WriteFile(part, good, 0o600))
	run(0, append([]string{"push", list}, login...)...)
	desc, err := w.siteHead(t, relocated)
	require.NoError(t, err)
	want, err := img.Digest()
	require.NoError(t, err)
	assert.Equal(t, want, desc.Digest, "the new image at the site, by the source's digest")
	t.Logf("delta: %d versions, %d dependencies, %d left out, %d parts", len(s.Versions), len(s.Dependencies), len(s.LeftOut), len(s.Parts))
}

// carried are the repositories of the versions an archive carries, sorted,
// and the references of its dependencies.
func carried(s archive.Summary) (versions, deps []string) {
	for _, v := range s.Versions {
		versions = append(versions, v.Repository)
	}
	for _, d := range s.Dependencies {
		deps = append(deps, d.Reference)
	}
	slices.Sort(versions)
	return versions, deps
}

// moveToNewImage moves podinfo-stable of alpha to a chart 6.9.0 that runs
// app:2.0, an image of 3 MiB, both pushed to the source: the image's
// reference and the image.
func (w *depsWorld) moveToNewImage(t *testing.T) (string, v1.Image) {
	t.Helper()
	image2 := w.source.Host + "/solar-test/app:2.0"
	img, err := random.Image(3<<20, 1)
	require.NoError(t, err)
	require.NoError(t, ggcrremote.Write(mustRef(t, image2), img, ggcrremote.WithTransport(tlsTransport(t, w.source.CAFile))))
	chart := filepath.Join(w.dir, "chart2", "templates")
	require.NoError(t, os.MkdirAll(chart, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(chart, "deployment.yaml"), fmt.Appendf(nil, appDeployment, image2), 0o644))
	testenv.PushChart(t, w.source, filepath.Dir(chart), "stefanprodan/charts", "podinfo", "6.9.0")
	appendFile(t, filepath.Join(w.examples, "shared/components.yaml"), strings.ReplaceAll(componentVersion69, "SOURCE", w.source.Host))
	editFile(t, filepath.Join(w.examples, "alpha/releases.yaml"), "    name: podinfo-6-7-0\n", "    name: podinfo-6-9-0\n")
	return image2, img
}

// componentVersion69 is podinfo 6.9.0 of the source SOURCE.
const componentVersion69 = `---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: ComponentVersion
metadata:
  name: podinfo-6-9-0
  namespace: shared
spec:
  componentRef:
    name: podinfo
  tag: 6.9.0
  resources:
    chart:
      repository: SOURCE/stefanprodan/charts/podinfo
      tag: 6.9.0
      helm:
        name: podinfo
        version: 6.9.0
  entrypoint:
    resourceName: chart
    type: helm
`

// siteHead asks the site registry for ref's manifest, logged in.
func (w *depsWorld) siteHead(t *testing.T, ref string) (*v1.Descriptor, error) {
	t.Helper()
	return ggcrremote.Head(mustRef(t, ref), ggcrremote.WithTransport(tlsTransport(t, w.site.CAFile)),
		ggcrremote.WithAuth(&authn.Basic{Username: w.site.Username, Password: w.site.Password}))
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	require.NoError(t, err)
	return r
}

func appendFile(t *testing.T, file, text string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString(text)
	require.NoError(t, err)
}

func editFile(t *testing.T, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// TestPushRefusedWritesNoDependency: an archive whose Solar versions push
// refuses (here: unsigned, and --key asks every version to verify) relocates
// none of its dependencies either: the versions are checked before the
// first dependency is written.
func TestPushRefusedWritesNoDependency(t *testing.T) {
	needRegistry(t)
	w := newDepsWorld(t)
	w.pushIndex(t)
	login := []string{"--registry", w.site.Host + "/solar", "--ca-file", w.site.CAFile, "--username", w.site.Username, "--password-stdin"}
	out, bundle := filepath.Join(w.dir, "out"), filepath.Join(w.dir, "bundle.tar")
	code, _, stderr := w.cli(append([]string{"render", "--no-credentials", "--out", out, w.examples}, login...)...)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = w.cli("export", out, w.examples, "--with-dependencies", "--out", bundle)
	require.Equal(t, 0, code, stderr)
	_, pub := writeKey(t, w.dir, "solar")
	code, _, stderr = w.cli(append([]string{"push", bundle, "--key", pub}, login...)...)
	require.Equal(t, 1, code, stderr)
	_, err := w.siteHead(t, w.site.Host+"/mirror/"+strings.ReplaceAll(w.source.Host, ":", "_")+"/solar-test/app:1.0")
	assert.Error(t, err, "no dependency was relocated: %s", stderr)
}
