package helmyaml

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// tricky scalars: the ones YAML reads as something else when unquoted, numbers
// at the edges of int, uint64 and float64 and of JSON's number formats, and
// strings JSON escapes.
var trickyScalars = []any{
	nil, true, false, "", "true", "no", "~", "null", "1", "0x10", "0o7", "1_000", "1e3", ".5", "-.inf", ".nan",
	"2001-12-14", "12:30:45", "a: b", "- x", "#c", "&a", "*a", "!t", "%", "@", "`", "'q'", `"q"`, `back\slash`,
	" lead", "trail ", "two\nlines", "tab\there", "<&>", "\u2028", "\x00", "\x7f", "ü", "日本", "\xff\xfe", "emoji 🚀",
	"a10", "a01", "a001", "a0", "a1", "a1b", "a1-", "a-1", "a_1", "10", "010", "x0y", "x00y", "٣", "a٣", "_x", "X", "x", "ǅ",
	"a105", "a19", "a109", "a1009", "v1.10", "v1.9", "x20", "x100", "x1000",
	0, -1, 42, int64(math.MaxInt64), int64(math.MinInt64), uint64(math.MaxUint64), 1.5, -0.0, 0.1, 1.0, 1e6, 1e20, 1e21,
	1e-6, 1e-7, math.MaxFloat64, math.SmallestNonzeroFloat64, float32(0.1), int8(-8), uint(7),
	[]string{"typed", "slice"}, map[string]string{"typed": "map"}, struct{ A int }{1}, []byte("bytes"),
}

// TestMarshalIsSigsYAML: values are written byte for byte as
// sigs.k8s.io/yaml.Marshal writes them (Helm's writer, and solar's before
// this package): else every chart's digest would move.
func TestMarshalIsSigsYAML(t *testing.T) {
	check := func(t *testing.T, v any) {
		t.Helper()
		want, wantErr := yaml.Marshal(v)
		got, err := Marshal(v)
		if wantErr != nil {
			assert.Error(t, err, "%#v", v)
			return
		}
		require.NoError(t, err, "%#v", v)
		assert.Equal(t, string(want), string(got), "%#v", v)
	}
	for _, s := range trickyScalars {
		check(t, s)
		check(t, map[string]any{"k": s, fmt.Sprint(s): []any{s, map[string]any{"in": s}}})
	}
	check(t, map[string]any{"nan": math.NaN()})
	check(t, map[string]any{"nilmap": map[string]any(nil), "nillist": []any(nil), "empty": map[string]any{}, "none": []any{}})
	check(t, map[string]any{"a10": 1, "a9": 2, "A": 3, "10": 4, "9": 5, "": 6, "b1": 7})

	var keys []string
	for _, s := range trickyScalars {
		keys = append(keys, fmt.Sprint(s))
	}
	rng := rand.New(rand.NewPCG(16, 1))
	var gen func(depth int) any
	gen = func(depth int) any {
		if depth > 0 && rng.IntN(3) > 0 {
			if rng.IntN(2) == 0 {
				m := map[string]any{}
				for range rng.IntN(6) {
					m[keys[rng.IntN(len(keys))]] = gen(depth - 1)
				}
				return m
			}
			l := []any{}
			for range rng.IntN(5) {
				l = append(l, gen(depth-1))
			}
			return l
		}
		return trickyScalars[rng.IntN(len(trickyScalars))]
	}
	compared := 0
	for range 3000 {
		if v := map[string]any{"values": gen(5)}; transitive(v) {
			check(t, v)
			compared++
		}
	}
	t.Logf("compared %d random documents whose maps go-yaml writes in one order", compared)
	assert.Greater(t, compared, 1000)
}

// transitive says whether go-yaml v2's order of keys (yamlKeyLess) is
// transitive among the keys of each map of v: only then does go-yaml write a
// map in one order.
func transitive(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for a := range v {
			for b := range v {
				for c := range v {
					if yamlKeyLess(a, b) && yamlKeyLess(b, c) && !yamlKeyLess(a, c) {
						return false
					}
				}
			}
			if !transitive(v[a]) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !transitive(e) {
				return false
			}
		}
	}
	return true
}

// TestMarshalOneOrder: keys go-yaml v2 orders differently from run to run
// (its order is not transitive among them: 1_000 < 010 < 0x10 < 1_000) are
// written in one order, so a chart's digest is the same on every run.
// sigs.k8s.io/yaml.Marshal writes these maps in many orders.
func TestMarshalOneOrder(t *testing.T) {
	values := map[string]any{"1_000": 1, "010": 2, "0x10": 3, "a": 4, "%": 5, "1.5": 6, "18446744073709551615": 7, "٣": 8, "007": 9, "~": 10}
	outputs := map[string]bool{}
	for range 300 {
		b, err := Marshal(values)
		require.NoError(t, err)
		outputs[string(b)] = true
	}
	assert.Len(t, outputs, 1)
	sigs := map[string]bool{}
	for range 300 {
		b, err := yaml.Marshal(values)
		require.NoError(t, err)
		sigs[string(b)] = true
	}
	t.Logf("sigs.k8s.io/yaml.Marshal wrote the same map in %d orders in 300 runs", len(sigs))
}
