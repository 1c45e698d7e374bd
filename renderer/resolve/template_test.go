package resolve

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/model"
)

// TestValuesTemplateHostile: a template from a pull request renders within
// bounded time and output, or fails with a clear error; it cannot add keys
// through user data printed as it is.
func TestValuesTemplateHostile(t *testing.T) {
	target := &model.Target{Meta: model.Meta{Name: "edge-1", Namespace: "alpha"}}
	target.Spec.Userdata = map[string]any{
		"site":  "hamburg\nimage: evil\nhostNetwork: true",
		"tags":  []any{"a", "b"},
		"plain": "north",
		"ls":    "ok\u2028hostNetwork: true",
		"nel":   "ok\u0085hostNetwork: true",
		"cr":    "a: 1\rhostNetwork: true",
		"flow":  "a, hostNetwork: true",
		"brace": "{hostNetwork: true}",
		"quot":  `a", "hostNetwork": "true`,
		"dq":    `"`,
		"tab":   "hostNetwork:\ttrue",
		"dash":  " - evil",
		"end":   "...",
		"sq":    "', evil: 1, z: '",
		"lines": "line1\u2028line2",
		"ok":    []any{"user@example.com", "ghcr.io/org/img@sha256:abc", "https://x.example/y?a=1&b=2#top", "50%", "10.0.0.1:8080", "-v", "a#b"},
	}
	target.Labels = map[string]string{"ring": "canary"}
	render := func(tmpl string) (string, error) {
		sel := &Selected{Release: &model.Release{Meta: model.Meta{Name: "r", Namespace: "alpha"}}}
		sel.Chart.ValuesTemplate = tmpl
		return valuesTemplate(target, sel)
	}
	for _, c := range []struct{ tmpl, want, err string }{
		{tmpl: `site: {{ .Target.Userdata.plain }}`, want: "site: north"},
		{tmpl: `site: {{ .Target.Userdata.site | toJson }}`, want: `site: "hamburg\nimage: evil\nhostNetwork: true"`},
		{tmpl: `site: {{ .Target.Userdata.site | quote }}`, want: `site: "hamburg\nimage: evil\nhostNetwork: true"`},
		{tmpl: "tags: {{ .Target.Userdata.tags | toYaml | nindent 2 }}", want: "tags: \n  - a\n  - b"},
		{tmpl: `message: {{ .Target.Userdata.site }}`, err: "a multi-line string printed as it is could add keys to the values: pipe it through toYaml, toJson or quote"},
		{tmpl: `tags: {{ .Target.Userdata.tags }}`, err: "a map or list printed as it is"},
		{tmpl: `home: {{ env "HOME" }}`, err: `function "env" not defined`},
		{tmpl: `{{range 2000000000}}xxxxxxxx{{end}}`, err: "the output is longer than 1048576 bytes"},
		{tmpl: `just a string`, err: "the output is not a YAML mapping of values"},
		{tmpl: "a: [", err: "the output is not YAML"},
		// A define or block is guarded as the main template is.
		{tmpl: `{{define "x"}}message: {{ .Target.Userdata.site }}{{end}}{{template "x" .}}`, err: "a multi-line string printed as it is"},
		{tmpl: `{{block "x" .}}message: {{ .Target.Userdata.site }}{{end}}`, err: "a multi-line string printed as it is"},
		{tmpl: `{{define "x"}}tags: {{ .Target.Userdata.tags }}{{end}}{{template "x" .}}`, err: "a map or list printed as it is"},
		{tmpl: `{{define "x"}}site: {{ .Target.Userdata.site | quote }}{{end}}{{template "x" .}}`, want: `site: "hamburg\nimage: evil\nhostNetwork: true"`},
		// Strings grown in a loop, and widths, are refused before they fill
		// memory (doubled 25 times: 64 MiB).
		{tmpl: `{{ $x := "ab" }}{{ range 25 }}{{ $x = printf "%s%s" $x $x }}{{ end }}a: b`, err: "the output is longer than 1048576 bytes"},
		{tmpl: `{{ $x := "ab" }}{{ range 25 }}{{ $x = print $x $x }}{{ end }}a: b`, err: "the output is longer than 1048576 bytes"},
		{tmpl: `{{ $x := "\\" }}{{ range 25 }}{{ $x = quote $x }}{{ end }}a: b`, err: "the output is longer than 1048576 bytes"},
		{tmpl: `{{ $x := "<" }}{{ range 25 }}{{ $x = html $x $x }}{{ end }}a: b`, err: "the output is longer than 1048576 bytes"},
		{tmpl: `a: {{ indent 100000000 "x" }}`, err: "the output is longer than 1048576 bytes"},
		{tmpl: `{{ $x := "\n" }}{{ range 10 }}{{ $x = print $x $x }}{{ end }}{{ $y := $x | nindent 2000 }}a: b`, err: "the output is longer than 1048576 bytes"},
		{tmpl: `a: {{ printf "%0999999d" 1 }}`, err: "a width or precision of 10000 or more"},
		{tmpl: `a: {{ printf "%.*f" 999999 1.0 }}`, err: "a width or precision of 10000 or more"},
		{tmpl: `a: {{ printf "%05d" 7 | quote }}`, want: `a: "00007"`},
		// What YAML reads as a line break or as structure, printed as it
		// is, is refused; through a formatter it keeps its place.
		{tmpl: `key: {{ .Target.Userdata.ls }}`, err: "a multi-line string printed as it is"},
		{tmpl: `key: {{ .Target.Userdata.nel }}`, err: "a multi-line string printed as it is"},
		{tmpl: "config:\n{{ .Target.Userdata.cr | indent 2 }}", err: "YAML's structure characters"},
		{tmpl: "config:{{ .Target.Userdata.cr | nindent 2 }}", err: "YAML's structure characters"},
		{tmpl: "config:{{ .Target.Userdata.lines | nindent 2 }}", want: "config:\n  line1\n  line2"},
		{tmpl: "image:\n  tag: {{ .Target.Userdata.dq | nindent 4 }}\nsecurityContext: {runAsNonRoot: true}", err: "YAML's structure characters"},
		{tmpl: "hosts:\n  - {{ .Target.Userdata.tab }}", err: "YAML's structure characters"},
		{tmpl: "hosts:\n  - {{ .Target.Userdata.dash }}", err: "YAML's structure characters"},
		{tmpl: "a: 1\n{{ .Target.Userdata.end }}\nb: 2", err: "YAML's structure characters"},
		{tmpl: `{a: '{{ .Target.Userdata.sq | quote }}'}`, want: `{a: '"\u0027, evil: 1, z: \u0027"'}`},
		{tmpl: `{{ range .Target.Userdata.ok }}{{ . }} {{ end }}: x`, want: "user@example.com ghcr.io/org/img@sha256:abc https://x.example/y?a=1&b=2#top 50% 10.0.0.1:8080 -v a#b : x"},
		{tmpl: `{{ $f := "%[1]s%[1]s" }}a: {{ printf $f "x" }}`, err: "an argument index ([n]) is not allowed"},
		{tmpl: `{name: {{ .Target.Userdata.flow }}}`, err: "YAML's structure characters"},
		{tmpl: `key: {{ .Target.Userdata.brace }}`, err: "YAML's structure characters"},
		{tmpl: `{"name": "{{ .Target.Userdata.quot }}"}`, err: "YAML's structure characters"},
		{tmpl: `{name: {{ .Target.Userdata.flow | quote }}}`, want: `{name: "a, hostNetwork: true"}`},
		{tmpl: `labels: {{ .Target.Labels }}`, err: "a map or list printed as it is"},
		{tmpl: "app:\n  key: {{ .Target.Userdata.site | toYaml }}", err: "toYaml of a map, list or multi-line string printed where it stands"},
		{tmpl: "app:\n  key: {{ .Target.Userdata.plain | toYaml }}", want: "app:\n  key: north"},
		{tmpl: "a: &a x\nb: *a", err: "line 2: the output has an alias (*a)"},
		// What the functions build is counted: 20 copies of 1 MiB are
		// more than one rendering may build.
		{tmpl: `{{ $x := "ab" }}{{ range 19 }}{{ $x = print $x $x }}{{ end }}{{ range 20 }}{{ $y := print $x }}{{ end }}a: b`, err: "the template's functions built more than 16777216 bytes"},
		{tmpl: `{{ $x := "ab" }}{{ range 19 }}{{ $x = print $x $x }}{{ end }}{{ $y := print $x $x $x }}a: b`, err: "the output is longer than 1048576 bytes"},
		{tmpl: `{{define "a"}}{{if lt (len .) 60}}{{template "a" (print . "x")}}{{template "a" (print . "x")}}{{end}}{{end}}{{template "a" ""}}a: b`, err: "the template's functions built more than"},
	} {
		got, err := render(c.tmpl)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.tmpl)
			continue
		}
		require.NoError(t, err, c.tmpl)
		assert.Equal(t, c.want, got, c.tmpl)
	}

	start := time.Now()
	_, err := render(`{{range 100000}}{{range 100000}}{{end}}{{end}}`)
	assert.ErrorContains(t, err, "did not finish within 2s")
	assert.Less(t, time.Since(start), TemplateTimeout+5*time.Second, "the caller is not held past the deadline (a loaded machine's seconds aside)")
	assert.True(t, strings.HasPrefix(err.Error(), "rendering for Target alpha/edge-1: "))
}

// TestValuesTemplateStopsAtTheDeadline: a loop that outlives the deadline
// ends with it, nested, in a define, or with no output: nothing runs on
// once the caller has its error (a controller would otherwise spend a core
// on each such loop for as long as it runs).
func TestValuesTemplateStopsAtTheDeadline(t *testing.T) {
	target := &model.Target{Meta: model.Meta{Name: "edge-1", Namespace: "alpha"}}
	for _, tmpl := range []string{
		`{{range 100000}}{{range 100000}}{{end}}{{end}}`,
		`{{define "spin"}}{{range 100000}}{{range 100000}}{{ $x := 1 }}{{end}}{{end}}{{end}}a: {{template "spin" .}}`,
		// 2^60 calls, no loop, nothing built: each call takes a step.
		`{{define "a"}}{{if .}}{{template "a" (slice . 1)}}{{template "a" (slice . 1)}}{{end}}{{end}}{{template "a" (printf "%060d" 0)}}a: b`,
	} {
		before := runtime.NumGoroutine()
		sel := &Selected{Release: &model.Release{Meta: model.Meta{Name: "r", Namespace: "alpha"}}}
		sel.Chart.ValuesTemplate = tmpl
		_, err := valuesTemplate(target, sel)
		require.ErrorContains(t, err, "did not finish within 2s", tmpl)
		// Polled here: Eventually's own goroutine would be counted.
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		assert.LessOrEqual(t, runtime.NumGoroutine(), before, "the execution ended: %s", tmpl)
	}
}

// FuzzValuesTemplate: whatever the template, rendering ends within its
// deadline with a mapping or an error, never a panic.
func FuzzValuesTemplate(f *testing.F) {
	for _, seed := range []string{
		`site: {{ .Target.Userdata.site }}`,
		`site: {{ .Target.Userdata.site | toYaml | nindent 2 }}`,
		`{{range 2000000000}}xxxxxxxx{{end}}`,
		`{{ env "HOME" }}`,
		`{{ define "x" }}{{ template "x" }}{{ end }}{{ template "x" }}`,
		`a: {{ .Release.Name | quote }}{{ if .Target.Labels }}b: 1{{ end }}`,
	} {
		f.Add(seed)
	}
	target := &model.Target{Meta: model.Meta{Name: "t", Namespace: "n", Labels: map[string]string{"a": "b"}}}
	target.Spec.Userdata = map[string]any{"site": "a\nb: c", "n": int64(3)}
	f.Fuzz(func(t *testing.T, tmpl string) {
		sel := &Selected{Release: &model.Release{Meta: model.Meta{Name: "r", Namespace: "n"}}}
		sel.Chart.ValuesTemplate = tmpl
		out, err := valuesTemplate(target, sel)
		if err == nil && len(out) > MaxTemplateOutput {
			t.Fatalf("output of %d bytes", len(out))
		}
	})
}
