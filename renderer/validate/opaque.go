package validate

import (
	"maps"
	"math/big"
	"regexp"
	"strconv"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
)

// opaque are the fields whose content is the user's data, not solar's:
// schemas and policies see them as empty, and Go checks them as data. Unifying
// a large map in CUE costs time quadratic in its keys.
var opaque = map[string][]string{
	api.KindRelease: {"values"},
	api.KindTarget:  {"userdata"},
	api.KindProfile: {"userdata"},
}

// maxExact is the largest integer a float64 holds exactly: Helm reads values
// as float64, so a larger one would reach the chart changed.
var maxExact = big.NewInt(1 << 53)

// withoutOpaque returns the object's fields with its opaque maps emptied (a
// shallow copy; o.Fields is not changed), and the problems of their data;
// strict makes errors of the warnings about numbers (see checkData).
func withoutOpaque(o *load.Object, strict bool) (map[string]any, diag.List) {
	fields := opaque[o.Kind]
	spec, ok := o.Fields["spec"].(map[string]any)
	if len(fields) == 0 || !ok {
		return o.Fields, nil
	}
	var problems diag.List
	out := maps.Clone(o.Fields)
	spec = maps.Clone(spec)
	out["spec"] = spec
	for _, f := range fields {
		if m, ok := spec[f].(map[string]any); ok {
			checkData(o, load.Key("spec", f), m, strict, &problems)
			if f == "userdata" {
				secretKeys(o, load.Key("spec", f), m, &problems)
			}
			spec[f] = map[string]any{}
		}
	}
	return out, problems
}

// secretLike are words in a key that suggest a secret.
var secretLike = regexp.MustCompile(`(?i)(password|passwd|token|secret|credential|private|api[-_]?key|(^|[-_.])key$)`)

// secretKeys warns about userdata keys that look like secrets: userdata is
// published into every bootstrap chart of the Target, which the Target's pull
// secret (shared by its namespace) reads.
func secretKeys(o *load.Object, path string, m map[string]any, problems *diag.List) {
	for k, v := range m {
		p := load.Key(path, k)
		if secretLike.MatchString(k) {
			problems.Warnf(o.File, o.LineOf(p), p, "looks like a secret: userdata is published in the Target's bootstrap chart, which every pull secret of its namespace reads; keep secrets in Secrets on the cluster (policy secret-userdata)")
		}
		if sub, ok := v.(map[string]any); ok {
			secretKeys(o, p, sub, problems)
		}
	}
}

// checkData reports integers that do not survive Helm's values (float64),
// and warns of (with strict: rejects) numbers that read as another number
// than written: tag: 1.10 reaches the chart as 1.1. Values are the chart's
// data and solar cannot know whether the chart wants a number there (cpu:
// 0.50 is fine), so by default this is a warning.
func checkData(o *load.Object, path string, v any, strict bool, problems *diag.List) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			checkData(o, load.Key(path, k), e, strict, problems)
		}
	case []any:
		for i, e := range v {
			checkData(o, load.Index(path, i), e, strict, problems)
		}
	case float64:
		if lit, ok := o.Literal(path); ok {
			sev := map[bool]diag.Severity{false: diag.Warning, true: diag.Error}[strict]
			line, col := o.PosOf(path)
			problems.Addf(sev, o.File, line, col, path, "%s is a number (read as %s): the chart gets %s; if it is a version or other text, quote it: %s",
				lit, show(v), show(v), writeAt(path, strconv.Quote(lit)))
		}
	case int64:
		if v > 1<<53 || v < -(1<<53) {
			tooBig(o, path, big.NewInt(v), problems)
		}
	case *big.Int:
		tooBig(o, path, v, problems)
	}
}

func tooBig(o *load.Object, path string, n *big.Int, problems *diag.List) {
	if new(big.Int).Abs(n).Cmp(maxExact) <= 0 {
		return
	}
	problems.Errorf(o.File, o.LineOf(path), path, "%s is beyond ±2^53: Helm reads values as float64 and would change it; quote it as a string", n)
}
