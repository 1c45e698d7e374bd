package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// sources are every release and bootstrap chart of a plan, by chart name.
func sources(p *resolve.Plan) map[string]*Source {
	out := map[string]*Source{}
	for _, tp := range p.Targets {
		var refs []Ref
		for i, sel := range tp.Releases {
			out[fmt.Sprintf("release-%s", sel.Release.Name)] = Release(sel, AppOptions{})
			refs = append(refs, Ref{URL: chain.URL("registry.example.com/prefix", chain.ReleaseRepository(tp.Namespace, sel.Release.Namespace, sel.Release.Name)), Version: fmt.Sprintf("0.0.%d", i+1)})
		}
		b := Bootstrap(tp, refs)
		out[b.Name] = b
	}
	return out
}

// given are the values a release chart of a plan gets from the bootstrap
// chart of its first Target, by chart name; a bootstrap chart gets none.
func given(p *resolve.Plan) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, tp := range p.Targets {
		for _, sel := range tp.Releases {
			name := "release-" + sel.Release.Name
			if _, ok := out[name]; !ok {
				out[name] = TargetValues(sel)
			}
		}
	}
	return out
}

func TestPackageIsReproducible(t *testing.T) {
	src := sources(testenv.ExamplesPlan(t))["bootstrap-edge-2"]
	require.NotNil(t, src)
	a, err := src.Package("0.0.3", Options{})
	require.NoError(t, err)
	b, err := src.Package("0.0.3", Options{})
	require.NoError(t, err)
	assert.Equal(t, a.Archive, b.Archive)
	assert.Equal(t, a.Config, b.Config)

	zr, err := gzip.NewReader(bytes.NewReader(a.Archive))
	require.NoError(t, err)
	assert.Empty(t, zr.Name, "gzip header name")
	assert.True(t, zr.ModTime.IsZero(), "gzip header time")
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		names = append(names, h.Name)
		assert.Equal(t, time.Unix(0, 0).UTC(), h.ModTime.UTC(), h.Name)
		assert.Equal(t, int64(0o644), h.Mode, h.Name)
		assert.Zero(t, h.Uid, h.Name)
		assert.Zero(t, h.Gid, h.Name)
		assert.Empty(t, h.Uname, h.Name)
		assert.Empty(t, h.Gname, h.Name)
	}
	assert.Equal(t, []string{
		"bootstrap-edge-2/Chart.yaml", "bootstrap-edge-2/templates/_solar.tpl",
		"bootstrap-edge-2/templates/releases.yaml", "bootstrap-edge-2/values.yaml",
	}, names, "entries in lexical order")

	// SOURCE_DATE_EPOCH moves the manifest's created time, never the chart.
	c, err := src.Package("0.0.3", Options{Created: time.Unix(1700000000, 0)})
	require.NoError(t, err)
	assert.Equal(t, a.Layer.Digest, c.Layer.Digest)

	ch, err := loader.LoadArchive(bytes.NewReader(a.Archive))
	require.NoError(t, err, "Helm's loader reads the archive")
	assert.Equal(t, "bootstrap-edge-2", ch.Metadata.Name)
	assert.Equal(t, "0.0.3", ch.Metadata.Version)
	assert.JSONEq(t, string(a.Config), mustJSON(t, ch.Metadata), "the OCI config is the chart's metadata")
}

// TestChartsLintAndTemplate runs Helm's linter in process and the real helm
// CLI on every chart examples/ renders.
func TestChartsLintAndTemplate(t *testing.T) {
	plan := testenv.ExamplesPlan(t)
	values := given(plan)
	for name, src := range sources(plan) {
		t.Run(name, func(t *testing.T) {
			pkg, err := src.Package("0.0.1", Options{})
			require.NoError(t, err)
			lintArchive(t, pkg, values[name])
			docs := helmTemplate(t, pkg, "solar-bootstrap-x", "flux-system", values[name])
			require.NotEmpty(t, docs)
			for _, d := range docs {
				assertObject(t, d)
			}
		})
	}
}

func lintArchive(t *testing.T, pkg *Packaged, values map[string]any) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, chartutil.Expand(dir, bytes.NewReader(pkg.Archive)))
	l := lint.RunAll(filepath.Join(dir, pkg.Name), values, "flux-system")
	for _, m := range l.Messages {
		assert.Less(t, m.Severity, support.WarningSev, "helm lint: %s", m)
	}
	// And the helm CLI (v4), as users run it: no error, no warning.
	valuesFile := filepath.Join(dir, "values.json")
	require.NoError(t, os.WriteFile(valuesFile, []byte(mustJSON(t, values)), 0o644))
	out, err := exec.Command(testenv.Tool(t, "helm"), "lint", filepath.Join(dir, pkg.Name), "--namespace", "flux-system", "-f", valuesFile).CombinedOutput()
	require.NoError(t, err, "helm lint:\n%s", out)
	assert.NotContains(t, string(out), "[WARNING]", "helm lint")
}

// helmTemplate runs `helm template` of the archive with values and returns
// its documents.
func helmTemplate(t *testing.T, pkg *Packaged, release, namespace string, values map[string]any) []map[string]any {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, pkg.Name+".tgz")
	require.NoError(t, os.WriteFile(file, pkg.Archive, 0o644))
	valuesFile := filepath.Join(dir, "values.json")
	require.NoError(t, os.WriteFile(valuesFile, []byte(mustJSON(t, values)), 0o644))
	cmd := exec.Command(testenv.Tool(t, "helm"), "template", release, file, "--namespace", namespace, "-f", valuesFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm template: %s", stderr.String())
	var docs []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "helm template output:\n%s", out)
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs
}

// assertObject checks what the API server would: a kind, a valid name, label
// values within 63 characters.
func assertObject(t *testing.T, d map[string]any) {
	t.Helper()
	assert.NotEmpty(t, d["apiVersion"])
	assert.Contains(t, []any{"OCIRepository", "HelmRelease", "ConfigMap"}, d["kind"])
	meta, _ := d["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	assert.NotEmpty(t, name)
	assert.LessOrEqual(t, len(name), 53, name)
	labels, _ := meta["labels"].(map[string]any)
	for k, v := range labels {
		assert.LessOrEqual(t, len(fmt.Sprint(v)), 63, k)
	}
}

func TestLongNamesAreCutAndStayUnique(t *testing.T) {
	long := strings.Repeat("x", 50)
	src := fmt.Sprintf(`
kind: Registry
metadata: {name: r, namespace: ns}
spec: {hostname: registry.example.com}
---
kind: Target
metadata: {name: t, namespace: ns}
spec: {renderRegistryRef: {name: r}}
---
kind: Release
metadata: {name: %[1]s-one-%[2]s, namespace: ns}
spec: {chart: {repository: registry.example.com/a, tag: "1"}}
---
kind: Release
metadata: {name: %[1]s-two-%[2]s, namespace: ns}
spec: {chart: {repository: registry.example.com/b, tag: "1"}}
---
kind: Profile
metadata: {name: one, namespace: ns}
spec: {releaseRef: {name: %[1]s-one-%[2]s}}
---
kind: Profile
metadata: {name: two, namespace: ns}
spec: {releaseRef: {name: %[1]s-two-%[2]s}}
`, long, long)
	objs, problems := load.Bytes("in.yaml", []byte(src), load.Options{})
	require.Empty(t, problems)
	pkg, err := sources(testenv.Plan(t, objs))["bootstrap-t"].Package("0.0.1", Options{})
	require.NoError(t, err)
	lintArchive(t, pkg, nil)

	names := map[string]string{}
	for _, d := range helmTemplate(t, pkg, "solar-bootstrap", "flux-system", nil) {
		assertObject(t, d)
		meta := d["metadata"].(map[string]any)
		full := meta["annotations"].(map[string]any)["solar.opendefense.cloud/name"]
		require.NotNil(t, full, "a cut name keeps the full one in an annotation")
		assert.True(t, strings.HasPrefix(full.(string), "solar-bootstrap-"+long))
		name := meta["name"].(string)
		if prev, ok := names[d["kind"].(string)+name]; ok {
			assert.Equal(t, prev, full, "two long names cut to the same one")
		}
		names[d["kind"].(string)+name] = full.(string)
	}
	assert.Len(t, names, 4, "two OCIRepositories and two HelmReleases with distinct names")
}

// TestValuesAreData: template syntax in Release values reaches the cluster
// literally; Helm never evaluates it, neither in the bootstrap chart nor in the
// release chart.
func TestValuesAreData(t *testing.T) {
	src := `
kind: Registry
metadata: {name: r, namespace: ns}
spec: {hostname: registry.example.com}
---
kind: Target
metadata: {name: t, namespace: ns, labels: {site: "{{ .Release.Name }}"}}
spec:
  renderRegistryRef: {name: r}
  userdata: {note: '{{ fail "userdata evaluated" }}'}
---
kind: Release
metadata: {name: app, namespace: ns}
spec:
  chart: {repository: registry.example.com/a, tag: "1"}
  values:
    message: '{{ fail "values evaluated" }}'
    nested: {list: ['{{ .Release.Name }}']}
---
kind: Profile
metadata: {name: app, namespace: ns}
spec: {releaseRef: {name: app}}
`
	objs, problems := load.Bytes("in.yaml", []byte(src), load.Options{})
	require.Empty(t, problems)
	plan := testenv.Plan(t, objs)
	srcs, values := sources(plan), given(plan)
	for _, name := range []string{"bootstrap-t", "release-app"} {
		pkg, err := srcs[name].Package("0.0.1", Options{})
		require.NoError(t, err)
		docs := helmTemplate(t, pkg, "solar-bootstrap-app", "flux-system", values[name])
		if name == "release-app" {
			var values any
			for _, d := range docs {
				if d["kind"] == "HelmRelease" {
					values = d["spec"].(map[string]any)["values"]
				}
			}
			assert.Equal(t, map[string]any{
				"message": `{{ fail "values evaluated" }}`,
				"nested":  map[string]any{"list": []any{"{{ .Release.Name }}"}},
			}, values)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestSourceKey: the pack cache's key of a chart changes with anything that
// changes its Chart.yaml or values.yaml, and a source without a JSON form has
// none.
func TestSourceKey(t *testing.T) {
	base := func() *Source {
		return &Source{Name: "c", Description: "d", AppVersion: "1", Annotations: map[string]string{"a": "b"},
			Values: map[string]any{"x": map[string]any{"y": 1}}, Templates: "release"}
	}
	assert.Equal(t, base().key(), base().key())
	changes := map[string]func(*Source){
		"name":        func(s *Source) { s.Name = "e" },
		"description": func(s *Source) { s.Description = "e" },
		"appVersion":  func(s *Source) { s.AppVersion = "2" },
		"annotation":  func(s *Source) { s.Annotations["a"] = "c" },
		"value":       func(s *Source) { s.Values["x"].(map[string]any)["y"] = 2 },
		"templates":   func(s *Source) { s.Templates = "bootstrap" },
	}
	for what, change := range changes {
		s := base()
		change(s)
		assert.NotEqual(t, base().key(), s.key(), what)
	}
	s := base()
	s.Values["x"] = math.NaN()
	assert.Empty(t, s.key(), "NaN has no JSON form: no key, so always packed")
}

// TestValuesInOneOrder: values whose keys go-yaml v2 orders differently from
// run to run (1_000 < 010 < 0x10 < 1_000) pack to one digest on every run
// (internal/helmyaml).
func TestValuesInOneOrder(t *testing.T) {
	values := map[string]any{"1_000": 1, "010": 2, "0x10": 3, "a": 4, "%": 5, "007": 6}
	digests := map[string]bool{}
	for range 200 {
		p, err := (&Source{Name: "release-x", Values: values, Templates: "release"}).Package("0.0.1", Options{})
		require.NoError(t, err)
		digests[p.Layer.Digest.String()] = true
	}
	assert.Len(t, digests, 1)
}
