package validate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/solar-pipeline/solar/renderer/load"
)

// faults returns the schema errors of an object's fields against def, its
// kind's schema: one per field, the cause rather than its consequences.
func faults(def cue.Value, fields map[string]any, o *load.Object) []fault {
	prefix := len(def.Path().Selectors())
	// One error per field: a value that breaks two constraints makes CUE report
	// the second as a consequence of the first; the shortest message is the cause.
	byPath := map[string]fieldError{}
	errs := fieldErrors(def.Unify(def.Context().Encode(fields)), fields)
	for _, e := range errs {
		e.path = e.path[min(prefix, len(e.path)):]
		path := cuePath(e.path)
		if old, ok := byPath[path]; !ok || len(text(e)) < len(text(old)) {
			byPath[path] = e
		}
	}
	if len(errs) > 0 {
		// CUE reports the unknown fields of a closed struct only when
		// nothing else in it is wrong; users want every problem at once.
		for _, e := range unknownFields(def, fields, nil) {
			if path := cuePath(e.path); byPath[path].format == "" {
				byPath[path] = e
			}
		}
	}
	var out []fault
	for path, e := range byPath {
		if deeper(path, byPath) {
			// A list or struct that holds a broken entry fails its own rules
			// too (needs at least one entry); the entry is the cause.
			continue
		}
		labels := make([]label, len(e.path))
		for i, s := range e.path {
			labels[i] = parseLabel(s)
		}
		f := fault{obj: o, path: path, format: e.format, args: e.args}
		f.data, f.has = dataAt(fields, labels)
		f.schema = schemaAt(def, labels)
		if n := len(labels); n > 0 {
			f.field = labels[n-1].name
			f.parent = schemaAt(def, labels[:n-1])
		}
		out = append(out, f)
	}
	return withoutMisspelled(out)
}

// unknownFields returns a "field not allowed" error for each field of data,
// at path inside it, that its schema v does not allow.
func unknownFields(v cue.Value, data any, path []string) []fieldError {
	var out []fieldError
	switch d := data.(type) {
	case map[string]any:
		for k, e := range d {
			p := append(slices.Clip(path), strconv.Quote(k))
			if !v.Allows(cue.Str(k)) {
				out = append(out, fieldError{path: p, format: "field not allowed"})
				continue
			}
			if f := schemaAt(v, []label{{name: k, index: -1}}); f.Exists() {
				out = append(out, unknownFields(f, e, p)...)
			}
		}
	case []any:
		if f := v.LookupPath(cue.MakePath(cue.AnyIndex)); f.Exists() {
			for i, e := range d {
				out = append(out, unknownFields(f, e, append(slices.Clip(path), strconv.Itoa(i)))...)
			}
		}
	}
	return out
}

func text(e fieldError) string { return fmt.Sprintf(e.format, e.args...) }

// deeper reports whether another error lies inside the field at path.
func deeper(path string, byPath map[string]fieldError) bool {
	for q := range byPath {
		if len(q) > len(path) && strings.HasPrefix(q, path) && (path == "" || q[len(path)] == '.' || q[len(path)] == '[') {
			return true
		}
	}
	return false
}

// withoutMisspelled drops "required but missing" for a field that an
// unknown field beside it misspells: hostnmae says both.
func withoutMisspelled(fs []fault) []fault {
	misspelled := map[string]bool{}
	for _, f := range fs {
		if f.format == "field not allowed" {
			if s := closest(f.field, fieldNames(f.parent)); s != "" {
				misspelled[load.Key(strings.TrimSuffix(strings.TrimSuffix(f.path, f.field), "."), s)] = true
			}
		}
	}
	return slices.DeleteFunc(fs, func(f fault) bool {
		return f.format == "field is required but not present" && misspelled[f.path]
	})
}

// dataAt returns the value at labels inside data, and whether it is set.
func dataAt(data any, labels []label) (any, bool) {
	for _, l := range labels {
		switch {
		case l.hidden:
			return data, true
		case l.index >= 0:
			list, ok := data.([]any)
			if !ok || l.index >= len(list) {
				return nil, false
			}
			data = list[l.index]
		default:
			m, ok := data.(map[string]any)
			if !ok {
				return nil, false
			}
			if data, ok = m[l.name]; !ok {
				return nil, false
			}
		}
	}
	return data, true
}

// schemaAt returns the schema at labels inside v: a list's element schema
// for an index, a pattern's for a name the struct does not list.
func schemaAt(v cue.Value, labels []label) cue.Value {
	for _, l := range labels {
		switch {
		case l.hidden:
			return v
		case l.index >= 0:
			v = v.LookupPath(cue.MakePath(cue.AnyIndex))
		default:
			f := v.LookupPath(cue.MakePath(cue.Str(l.name)))
			if !f.Exists() {
				f = v.LookupPath(cue.MakePath(cue.Str(l.name).Optional()))
			}
			if !f.Exists() {
				f = v.LookupPath(cue.MakePath(cue.Str(l.name).Required()))
			}
			if !f.Exists() {
				f = v.LookupPath(cue.MakePath(cue.AnyString))
			}
			v = f
		}
		if !v.Exists() {
			return v
		}
	}
	return v
}

// fieldNames returns the regular field names a struct schema allows.
func fieldNames(v cue.Value) []string {
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		if it.Selector().LabelType() == cue.StringLabel {
			out = append(out, it.Selector().Unquoted())
		}
	}
	return out
}

// closest returns the name of names nearest to s when it is close enough to
// be a typo (hostnmae, plainHttp, specs), else "".
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := distance(strings.ToLower(s), strings.ToLower(n))
		if d < bestD && d <= max(1, len(n)/4) {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the optimal string alignment distance: insertions, deletions,
// substitutions and swaps of two neighbours each cost 1.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
