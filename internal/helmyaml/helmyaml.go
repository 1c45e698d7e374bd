// Package helmyaml writes YAML as Helm does (sigs.k8s.io/yaml.Marshal), byte
// for byte, faster, and with every map in one order.
package helmyaml

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Marshal writes v as sigs.k8s.io/yaml.Marshal (Helm's writer of values and
// of toYaml) does, byte for byte, but faster and with its maps in one order.
//
// sigs.k8s.io/yaml writes v as JSON, parses that with go-yaml v2 and writes
// what it parsed: maps become map[any]any, numbers the int, uint64 or float64
// go-yaml reads their JSON text as. Parsing the document again was two thirds
// of the CPU of writing a bootstrap chart's values. Here strings of printable
// ASCII, booleans, nulls, maps and lists are converted directly; numbers,
// other strings and values of other types take that round trip, each on its
// own, so each converts exactly as before.
//
// go-yaml v2 sorts a map's keys with an order that is not transitive for some
// keys (1_000 < 010 < 0x10 < 1_000; a run of more than 18 digits overflows),
// starting from Go's random map order: the same values could be written in
// several orders, and a chart's digest change from run to run. Here a map's
// keys are sorted in go-yaml's order from their byte order, with a stable
// sort: where go-yaml's order is transitive the result is the one it always
// wrote; where it is not, it is still always the same.
func Marshal(v any) ([]byte, error) {
	doc, err := yamlValue(v)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %w", err)
	}
	return yamlv2.Marshal(doc)
}

// yamlValue is what go-yaml v2 parses the JSON of v as, with every map an
// ordered yamlv2.MapSlice.
func yamlValue(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool:
		return v, nil
	case string:
		if printableASCII(v) {
			return v, nil
		}
	case map[string]any:
		if v == nil {
			return nil, nil
		}
		m := make(yamlv2.MapSlice, 0, len(v))
		for k, e := range v {
			key, err := yamlValue(k)
			if err != nil {
				return nil, err
			}
			value, err := yamlValue(e)
			if err != nil {
				return nil, err
			}
			m = append(m, yamlv2.MapItem{Key: key, Value: value})
		}
		return sortedItems(m), nil
	case []any:
		if v == nil {
			return nil, nil
		}
		l := make([]any, len(v))
		for i, e := range v {
			var err error
			if l[i], err = yamlValue(e); err != nil {
				return nil, err
			}
		}
		return l, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := yamlv2.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return ordered(out), nil
}

// ordered turns the maps go-yaml parsed into sorted MapSlices.
func ordered(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(yamlv2.MapSlice, 0, len(v))
		for k, e := range v {
			m = append(m, yamlv2.MapItem{Key: k, Value: ordered(e)})
		}
		return sortedItems(m)
	case []any:
		for i, e := range v {
			v[i] = ordered(e)
		}
	}
	return v
}

// sortedItems sorts the items of a map parsed from JSON (string keys) by
// their key in go-yaml v2's order, stably from the keys' byte order.
func sortedItems(m yamlv2.MapSlice) yamlv2.MapSlice {
	key := func(it yamlv2.MapItem) string { s, _ := it.Key.(string); return s }
	slices.SortFunc(m, func(a, b yamlv2.MapItem) int { return strings.Compare(key(a), key(b)) })
	slices.SortStableFunc(m, func(a, b yamlv2.MapItem) int {
		switch ka, kb := key(a), key(b); {
		case yamlKeyLess(ka, kb):
			return -1
		case yamlKeyLess(kb, ka):
			return 1
		}
		return 0
	})
	return m
}

// yamlKeyLess is go-yaml v2's order of two string keys: letters by code
// point and before anything else; runs of digits by their value (an int64,
// wrapping as go-yaml's does), shorter runs first; other characters by code
// point; a prefix first.
func yamlKeyLess(a, b string) bool {
	ar, br := []rune(a), []rune(b)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al, bl := unicode.IsLetter(ar[i]), unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		// A run differing at a 0 after a nonzero digit is no shorter number.
		var start int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					start = 1
					break
				}
			}
		}
		ae, an := digitRun(ar, i, start)
		be, bn := digitRun(br, i, start)
		if an != bn {
			return an < bn
		}
		if ae != be {
			return ae < be
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

// digitRun reads the run of digits of r from i onto n; it returns where the
// run ends and its value.
func digitRun(r []rune, i int, n int64) (int, int64) {
	for ; i < len(r) && unicode.IsDigit(r[i]); i++ {
		n = n*10 + int64(r[i]-'0')
	}
	return i, n
}

// printableASCII says whether s is made of the characters JSON writes as
// themselves and go-yaml reads back unchanged from a double-quoted scalar:
// printable ASCII other than the two JSON escapes.
func printableASCII(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
