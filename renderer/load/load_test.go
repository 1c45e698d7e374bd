package load

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestBytesLinesAndNamespace(t *testing.T) {
	objs, problems := Bytes("a.yaml", []byte(`# comment
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Target
metadata:
  name: edge-1
  labels:
    app.kubernetes.io/name: edge
spec:
  renderRegistryRef:
    name: render
  list:
    - a
    - b: 1
---
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Registry
metadata: {name: r, namespace: infra}
spec: {hostname: registry.example.com, plainHTTP: false, port: 5000, ratio: 0.5, none: null}
`), Options{Namespace: "alpha"})
	require.Empty(t, problems)
	require.Len(t, objs, 2)

	tg := objs[0]
	assert.Equal(t, ID{Kind: "Target", Namespace: "alpha", Name: "edge-1"}, tg.ID())
	assert.Equal(t, 2, tg.Line)
	assert.Equal(t, "alpha", tg.Fields["metadata"].(map[string]any)["namespace"], "the default namespace is written into the object")
	for path, line := range map[string]int{
		"kind":          3,
		"metadata.name": 5,
		`metadata.labels["app.kubernetes.io/name"]`: 7,
		"spec.renderRegistryRef.name":               10,
		"spec.list[0]":                              12,
		"spec.list[1].b":                            13,
		"spec.renderRegistryRef.missing":            9, // nearest existing field
		`metadata.labels["missing.key/x"]`:          6,
		"status.conditions[3]":                      2, // the object itself
	} {
		assert.Equal(t, line, tg.LineOf(path), path)
	}

	reg := objs[1]
	assert.Equal(t, ID{Kind: "Registry", Namespace: "infra", Name: "r"}, reg.ID())
	assert.Equal(t, 16, reg.Line)
	assert.Equal(t, map[string]any{
		"hostname": "registry.example.com", "plainHTTP": false, "port": int64(5000), "ratio": 0.5, "none": nil,
	}, reg.Fields["spec"])
}

func TestBytesScalarsStayAsWritten(t *testing.T) {
	objs, problems := Bytes("a.yaml", []byte(`kind: TargetReport
spec:
  lastReportTime: 2026-11-30T10:00:00Z
  version: "1.0"
  yes: yes
  big: 99999999999999999999
`), Options{})
	require.Empty(t, problems)
	spec := objs[0].Fields["spec"].(map[string]any)
	assert.Equal(t, "2026-11-30T10:00:00Z", spec["lastReportTime"], "timestamps stay strings, as in Kubernetes")
	assert.Equal(t, "1.0", spec["version"])
	assert.Equal(t, "yes", spec["yes"], "YAML 1.2: yes is a string")
	big, ok := new(big.Int).SetString("99999999999999999999", 10)
	require.True(t, ok)
	assert.Equal(t, big, spec["big"], "an integer beyond int64 is kept exact, for validation to reject")
}

func TestBytesList(t *testing.T) {
	objs, problems := Bytes("list.yaml", []byte(`apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: solar.opendefense.cloud/v1alpha1
  kind: Target
  metadata:
    name: a
    namespace: beta
    uid: 5b0d8f4e
    resourceVersion: "48213"
    generation: 3
    creationTimestamp: "2026-10-02T08:14:55Z"
    managedFields: [{manager: kubectl}]
  spec:
    renderRegistryRef: {name: r}
  status:
    conditions: []
- apiVersion: solar.opendefense.cloud/v1alpha1
  kind: Target
  metadata: {name: b}
  spec: {renderRegistryRef: {name: r}}
`), Options{})
	require.Empty(t, problems)
	require.Len(t, objs, 2)
	assert.Equal(t, 5, objs[0].Line)
	assert.Equal(t, 8, objs[0].LineOf("metadata.name"), "lines are relative to the item, not to items[0]")
	assert.Equal(t, map[string]any{"name": "a", "namespace": "beta"}, objs[0].Fields["metadata"], "server-set fields are dropped")
	assert.NotContains(t, objs[0].Fields, "status")
	assert.Equal(t, ID{Kind: "Target", Namespace: "default", Name: "b"}, objs[1].ID())
	assert.Equal(t, 19, objs[1].Line)
}

func TestBytesProblems(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		want []string
	}{
		"syntax":        {"a: b\n c: d\n", []string{"f.yaml:2:3: syntax error: mapping values are not allowed in this context"}},
		"not an object": {"- a\n- b\n", []string{"f.yaml:1: not an object (found a list)"}},
		"duplicate key": {"a: 1\nb: 2\na: 3\n", []string{"f.yaml:3: a: duplicate field, first set at line 1"}},
		"merge key":     {"base: &b {x: 1}\nother:\n  <<: *b\n", []string{"f.yaml:3: other: unsupported mapping key (keys must be plain strings; merge keys << are not supported)"}},
		"list item":     {"kind: List\nitems: [1, {kind: Target}]\n", []string{"f.yaml:2: items[0]: not an object (found a number)"}},
		"alias bomb": {`a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			_, problems := Bytes("f.yaml", []byte(tc.src), Options{})
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if tc.want == nil {
				require.Len(t, got, 1)
				assert.Contains(t, got[0], "document expands to more than 1048576 values (too many aliases?)")
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestAliasBudgetIsPerFile: the expansion budget is the file's, not each
// List item's, and an object whose expansion ran over it is dropped.
func TestAliasBudgetIsPerFile(t *testing.T) {
	// e expands to 111,111 values; an item holding six of them to about
	// 667,000: under the budget alone, over it twice.
	defs := `kind: List
defs:
  a: &a [x, x, x, x, x, x, x, x, x, x]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
items:
`
	item := "- {kind: Target, metadata: {name: %s}, spec: {x: [*e, *e, *e, *e, *e, *e]}}\n"

	objs, problems := Bytes("one.yaml", []byte(defs+fmt.Sprintf(item, "a")), Options{})
	require.Empty(t, problems, "one item is within the budget")
	require.Len(t, objs, 1)

	objs, problems = Bytes("two.yaml", []byte(defs+fmt.Sprintf(item, "a")+fmt.Sprintf(item, "b")), Options{})
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].String(), "two.yaml:3: spec.x[", "the line of the value the alias expands")
	assert.Contains(t, problems[0].String(), "document expands to more than 1048576 values")
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	assert.Equal(t, []string{"a"}, names, "the item that ran over the budget is dropped, the one before it kept")
}

func TestPaths(t *testing.T) {
	dir := t.TempDir()
	target := "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata: {name: t}\n"
	write(t, dir, "b/one.yaml", target)
	write(t, dir, "a/two.yml", "kind: Registry\nmetadata: {name: r}\n")
	write(t, dir, "a/three.json", `{"kind": "Profile", "metadata": {"name": "p"}}`)
	write(t, dir, "a/notes.txt", "not: loaded")
	write(t, dir, "c/dup.yaml", target)
	explicit := write(t, dir, "x.input", "kind: Release\nmetadata: {name: x}\n")

	objs, problems, _ := Paths([]string{dir, explicit}, Options{})
	var ids []string
	for _, o := range objs {
		ids = append(ids, o.ID().String())
	}
	assert.Equal(t, []string{"Profile default/p", "Registry default/r", "Target default/t", "Target default/t", "Release default/x"}, ids,
		"directories are walked in lexical order for .yaml, .yml and .json; an explicit file is read whatever its extension")
	require.Len(t, problems, 1)
	assert.Equal(t, filepath.Join(dir, "c/dup.yaml")+":3:12: metadata.name: duplicate Target default/t, first defined at "+filepath.Join(dir, "b/one.yaml")+":3", problems[0].String())

	_, problems, _ = Paths([]string{filepath.Join(dir, "missing")}, Options{})
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].String(), "no such file or directory")
}

// FuzzBytes: whatever the input, loading returns objects or problems, never panics,
// and every problem names the file.
func FuzzBytes(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: List\nitems:\n- kind: Target\n  metadata: {name: a}\n",
		"kind: Target\nmetadata:\n  name: t\n  labels: {a: b}\nspec: {x: [1, 2.5, true, null, ~]}\n---\nfoo\n",
		`{"kind": "Registry", "metadata": {"name": "r"}, "spec": {"hostname": "h"}}`,
		"a: &x [1]\nb: *x\n<<: {c: 1}\n? [k]\n: v\n",
		"kind: List\nitems: {}\n",
		"\t- ]",
		// The hostile cases of the bad-input corpus.
		"a: &a [*a]\n",
		"a: &a {b: *a}\n",
		"kind: Target\nspec: {userdata: {a: .nan, b: -.inf, c: .NaN}}\n",
		"kind: Release\nspec: {values: {id: 9007199254740993, big: 123456789012345678901234567890}}\n",
		strings.Repeat("[", 1200) + strings.Repeat("]", 1200),
		// Syntax errors whose position is searched for.
		"a: 1\n---\nb:\n  c: \"d\n  e: f\n",
		"a:\n  b: c\n d: e\n\tf: g\n",
		"a: {b: [1, 2\nc: d\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, problems := Bytes("fuzz.yaml", data, Options{})
		for _, p := range problems {
			if p.File != "fuzz.yaml" {
				t.Fatalf("problem without the file: %v", p)
			}
		}
		for _, o := range objs {
			if o.Fields == nil || o.LineOf("spec.x[0]") < 0 {
				t.Fatalf("object without fields: %+v", o)
			}
		}
	})
}

// TestDuplicatePosition: a duplicate object is reported at its metadata.name,
// the field the message names, and the message names the first one's
// metadata.name line.
func TestDuplicatePosition(t *testing.T) {
	dir := t.TempDir()
	obj := "# %s\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: edge-1\n"
	first := write(t, dir, "a.yaml", fmt.Sprintf(obj, "first"))
	second := write(t, dir, "b.yaml", fmt.Sprintf(obj, "second"))
	_, problems, _ := Paths([]string{dir}, Options{})
	require.Len(t, problems, 1)
	assert.Equal(t, second+":5:3: metadata.name: duplicate Target default/edge-1, first defined at "+first+":5", problems[0].String())
}

// TestLiteral: a number that reads as another number than written keeps its
// text, for messages; one that reads as written does not.
func TestLiteral(t *testing.T) {
	objs, problems := Bytes("a.yaml", []byte("kind: Release\nspec:\n  tag: 1.10\n  hex: 0x1F\n  n: 5\n  neg: -3\n  f: 0.5\n  list: [2.0, 3]\n"), Options{})
	require.Empty(t, problems)
	o := objs[0]
	for path, want := range map[string]string{"spec.tag": "1.10", "spec.hex": "0x1F", "spec.list[0]": "2.0"} {
		got, ok := o.Literal(path)
		assert.True(t, ok, path)
		assert.Equal(t, want, got, path)
	}
	for _, path := range []string{"spec.n", "spec.neg", "spec.f", "spec.list[1]", "spec.missing"} {
		_, ok := o.Literal(path)
		assert.False(t, ok, path)
	}
	line, col := o.PosOf("spec.list[0]")
	assert.Equal(t, []int{8, 10}, []int{line, col})
}

// TestLargeFileBudget: a large honest file may hold more values than the
// fixed budget (one for every two of its bytes): 1.2 million values in 3.6
// MB load, as a file of 100,000 Targets must.
func TestLargeFileBudget(t *testing.T) {
	src := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: [" + strings.Repeat("11,", 1_200_000) + "11]\n"
	_, problems := Bytes("big.yaml", []byte(src), Options{})
	for _, p := range problems {
		assert.NotContains(t, p.Message, "expands to more than")
	}
}
