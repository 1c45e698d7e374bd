package load

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/diag"
)

func TestIgnore(t *testing.T) {
	ig := parseIgnore([]string{"# comment", "", "*.tmp", "build/", "/top.yaml", "docs/**/draft-*.yaml", "keep*", "!keep-me.yaml"})
	for _, c := range []struct {
		rel   string
		dir   bool
		match bool
	}{
		{"a.tmp", false, true},
		{"deep/b.tmp", false, true},
		{"build", true, true},
		{"sub/build", true, true},
		{"build", false, false}, // build/ matches folders only
		{"top.yaml", false, true},
		{"sub/top.yaml", false, false}, // anchored
		{"docs/draft-1.yaml", false, true},
		{"docs/a/b/draft-2.yaml", false, true},
		{"docs/a/final.yaml", false, false},
		{"keep-it.yaml", false, true},
		{"keep-me.yaml", false, false}, // negated by the later line
		{"targets.yaml", false, false},
	} {
		assert.Equal(t, c.match, ig.match(c.rel, c.dir), c.rel)
	}
}

// TestReadsRegularFilesOnly: what a pull request can put into the input tree
// never makes solar read outside it, block, or run out of memory.
func TestReadsRegularFilesOnly(t *testing.T) {
	outside := t.TempDir()
	secret := write(t, outside, "kubeconfig.yaml", "apiVersion: v1\nkind: Config\n")
	dir := t.TempDir()
	target := "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata: {name: t}\n"
	write(t, dir, "a/target.yaml", target)
	require.NoError(t, os.Symlink(filepath.Join(dir, "a/target.yaml"), filepath.Join(dir, "inside.yaml")))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "leak.yaml")))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o600))
	write(t, dir, "big.yaml", strings.Repeat("# padding\n", 200))

	done := make(chan struct{})
	var objs []*Object
	var problems diag.List
	go func() {
		defer close(done)
		objs, problems, _ = Paths([]string{dir}, Options{MaxFileSize: 1000})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading the tree blocked (a FIFO opened?)")
	}
	var got []string
	for _, p := range problems {
		got = append(got, strings.TrimPrefix(p.String(), dir+"/"))
	}
	assert.ElementsMatch(t, []string{
		"big.yaml: the file has 2000 bytes, more than the limit of 1000 (--max-file-size)",
		"leak.yaml: a symlink to " + secret + ", outside " + dir + ": not read",
		"pipe.yaml: not a regular file (p---------): not read",
		"zero.yaml: a symlink to /dev/zero, outside " + dir + ": not read",
		"inside.yaml:3:12: metadata.name: duplicate Target default/t, first defined at " + dir + "/a/target.yaml:3",
	}, got)
	assert.Len(t, objs, 2, "the symlink inside the tree is read")

	_, problems, _ = Paths([]string{"-"}, Options{Stdin: strings.NewReader(strings.Repeat("x", 2000)), MaxFileSize: 1000})
	require.Len(t, problems, 1)
	assert.Equal(t, "-: reading standard input: more than the limit of 1000 bytes (--max-file-size)", problems[0].String())
}

// TestWalkSkipsTemplates: a walked file with {{ }} that does not load (a
// Helm template outside a chart folder) is skipped and counted; one that
// names Solar's group outside templates/ (a valuesTemplate beside a
// mistake) is read, as is a template named on the command line or any file
// with Strict.
func TestWalkSkipsTemplates(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "app/templates/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  values.json: {{ toJson .Values | quote }}\n")
	write(t, dir, "app/templates/target.yaml", "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: {{ .Values.name }}\n")
	write(t, dir, "kustomize/cm.yaml", "{{- if .Values.x }}\nkind: ConfigMap\n{{- end }}\n")
	write(t, dir, "plain/merge.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  <<: {x: y}\n")
	cv := write(t, dir, "catalog/cv.yaml", "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: ComponentVersion\nmetadata: {name: app-1}\n"+
		"spec:\n  resources:\n    chart:\n      helm: {valuesTemplate: \"name: {{ .Target.Name }}\"}\n      {a: b}: c\n")
	lines := func(problems diag.List) []string {
		var out []string
		for _, p := range problems {
			out = append(out, strings.TrimPrefix(p.String(), dir+"/"))
		}
		return out
	}

	_, problems, skipped := Paths([]string{dir}, Options{})
	assert.Equal(t, 3, skipped.Files, "the three templates")
	got := lines(problems)
	require.Len(t, got, 2)
	assert.True(t, strings.HasPrefix(got[0], "catalog/cv.yaml:"), "a Solar object with {{ }} and a mistake is read: %s", got[0])
	assert.True(t, strings.HasPrefix(got[1], "plain/merge.yaml:5: "), "a file without {{ }} is no template: %s", got[1])

	_, problems, _ = Paths([]string{filepath.Join(dir, "app/templates/configmap.yaml"), cv}, Options{})
	assert.Len(t, lines(problems), 3, "named files are read: %v", lines(problems))

	_, problems, skipped = Paths([]string{filepath.Join(dir, "app/templates")}, Options{})
	assert.Equal(t, 1, skipped.Files, "configmap.yaml")
	got = lines(problems)
	require.Len(t, got, 1, "only a templates/ folder below the walked one counts")
	assert.True(t, strings.HasPrefix(got[0], "app/templates/target.yaml:4: "), got[0])

	_, problems, skipped = Paths([]string{dir}, Options{Strict: true})
	assert.Zero(t, skipped.Files)
	for _, f := range []string{"app/templates/configmap.yaml:4: ", "app/templates/target.yaml:", "kustomize/cm.yaml:"} {
		assert.True(t, slices.ContainsFunc(lines(problems), func(l string) bool { return strings.HasPrefix(l, f) }), "--strict reads %s: %v", f, lines(problems))
	}
}

// TestSkippedSaysCountsInWords: one of each is singular, more plural.
func TestSkippedSaysCountsInWords(t *testing.T) {
	one := Skipped{Groups: map[string]int{"core": 1}, Files: 1, Folders: 1}
	assert.Equal(t, "1 object of other API groups (core 1), 1 file that holds no Kubernetes objects, 1 Helm chart or OCI layout folder", one.String())
	two := Skipped{Groups: map[string]int{"core": 2}, Files: 2, Folders: 2}
	assert.Equal(t, "2 objects of other API groups (core 2), 2 files that hold no Kubernetes objects, 2 Helm chart or OCI layout folders", two.String())
}
