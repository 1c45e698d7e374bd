package validate

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/solar-pipeline/solar/renderer/load"
)

// Every schema error passes through say, which turns CUE's message into a
// sentence that names the value, what the schema wants and, where it is likely,
// the fix. The table holds the shapes of CUE's messages (its format strings,
// as errors.Error.Msg returns them) that users meet; a shape it does not
// know keeps CUE's text.

// fault is one schema error with what the sentence can draw on.
type fault struct {
	field  string // the field's name, as a YAML key (the last path segment)
	data   any    // the value as read from the file; has tells whether there is one
	has    bool   // the field is set
	obj    *load.Object
	path   string    // solar's field path, for Object.Literal
	schema cue.Value // what the schema says at the path; may not exist
	parent cue.Value // and at the struct or list that holds it
	format string    // CUE's message format
	args   []any     // and its arguments
}

// shapes are tried in order; the first that speaks gives the sentence.
var shapes = []func(f fault) (string, bool){
	unknownField,
	wrongKind,
	emptyValue,
	notServed,
	notOneOf,
	notInEnum,
	outOfBound,
	listLength,
	notATime,
	required,
	mustBe,
}

// say returns the sentence for f.
func say(f fault) string {
	for _, shape := range shapes {
		if s, ok := shape(f); ok {
			return s
		}
	}
	return fmt.Sprintf(f.format, f.args...)
}

// wrongKind: a value of another kind than the schema wants ("high" for an
// integer, 1.10 for a string). A number where a string is wanted is a version
// or tag written without quotes: YAML read it as a number, maybe another one.
func wrongKind(f fault) (string, bool) {
	if !f.has || f.data == nil || !f.schema.Exists() {
		return "", false
	}
	want := f.schema.IncompleteKind() &^ cue.BottomKind
	got := kindOf(f.data)
	if want == cue.TopKind || want == 0 || want&got != 0 || got == cue.BottomKind {
		return "", false
	}
	if want == cue.StringKind && (got&cue.NumberKind != 0 || got == cue.BoolKind) {
		written := show(f.data)
		if lit, ok := f.obj.Literal(f.path); ok {
			return fmt.Sprintf("%s is %s (read as %s); quote it: %s", lit, kindWord(f.data), written, writeAt(f.path, strconv.Quote(lit))), true
		}
		return fmt.Sprintf("%s is %s; quote it: %s", written, kindWord(f.data), writeAt(f.path, strconv.Quote(written))), true
	}
	switch f.data.(type) {
	case map[string]any, []any:
		return fmt.Sprintf("is %s; want %s", kindWord(f.data), wanted(f)), true
	}
	return fmt.Sprintf("%s is %s; want %s", show(f.data), kindWord(f.data), wanted(f)), true
}

// unknownField: a field the schema does not name; a typo of one it names
// gets the name.
func unknownField(f fault) (string, bool) {
	if f.format != "field not allowed" {
		return "", false
	}
	if s := closest(f.field, fieldNames(f.parent)); s != "" {
		return "unknown field; did you mean " + s + "?", true
	}
	return "unknown field", true
}

// emptyValue: a field written with nothing after the colon is null.
func emptyValue(f fault) (string, bool) {
	if !f.has || f.data != nil || !f.schema.Exists() {
		return "", false
	}
	if f.schema.IncompleteKind()&cue.NullKind != 0 {
		return "", false
	}
	return "is empty; want " + wanted(f), true
}

// notServed: an apiVersion of another version or group.
func notServed(f fault) (string, bool) {
	s, ok := f.data.(string)
	if f.path != "apiVersion" || !ok {
		return "", false
	}
	want, err := f.schema.String()
	if err != nil || want == s {
		return "", false
	}
	return fmt.Sprintf("%s is not served; want %s", s, want), true
}

// notOneOf: a string that is none of the values the schema lists.
func notOneOf(f fault) (string, bool) {
	s, ok := f.data.(string)
	if !ok || !strings.HasPrefix(f.format, "conflicting values %s and %s") || len(f.args) < 2 {
		return "", false
	}
	other := fmt.Sprint(f.args[0])
	if other == strconv.Quote(s) {
		other = fmt.Sprint(f.args[1])
	}
	if _, err := strconv.Unquote(other); err != nil {
		return "", false
	}
	return fmt.Sprintf("%q is not allowed; want %s", s, other), true
}

// notInEnum: a value that is none of a disjunction of strings
// ("Pending" | "Ready"), which CUE reports as an empty disjunction.
func notInEnum(f fault) (string, bool) {
	if !f.has || !f.schema.Exists() {
		return "", false
	}
	op, vals := f.schema.Expr()
	if op != cue.OrOp {
		return "", false
	}
	var names []string
	for _, v := range vals {
		s, err := v.String()
		if err != nil || !v.IsConcrete() {
			return "", false
		}
		names = append(names, s)
	}
	return fmt.Sprintf("%s is not one of %s", show(f.data), strings.Join(names, ", ")), true
}

var bound = regexp.MustCompile(`^(<=|>=|<|>)\s*(-?[0-9.]+)$`)

// outOfBound: a number beyond the schema's range (an int32's).
func outOfBound(f fault) (string, bool) {
	if !strings.HasPrefix(f.format, "invalid value ") || !strings.Contains(f.format, "(out of bound ") || len(f.args) < 2 {
		return "", false
	}
	m := bound.FindStringSubmatch(fmt.Sprint(f.args[1]))
	if m == nil {
		return "", false
	}
	words := map[string]string{"<=": "at most", ">=": "at least", "<": "less than", ">": "more than"}[m[1]]
	return fmt.Sprintf("%v is out of range; want %s %s%s", f.args[0], words, m[2], intType(f)), true
}

var listItems = regexp.MustCompile(`^list\.(Min|Max)Items\(([0-9]+)\)$`)

// listLength: a list with fewer or more entries than list.MinItems or
// list.MaxItems allow.
func listLength(f fault) (string, bool) {
	if !strings.HasPrefix(f.format, "invalid value ") || !strings.Contains(f.format, "(does not satisfy ") || len(f.args) < 2 {
		return "", false
	}
	m := listItems.FindStringSubmatch(fmt.Sprint(f.args[1]))
	l, ok := f.data.([]any)
	if m == nil || !ok {
		return "", false
	}
	words := map[string]string{"Min": "at least", "Max": "at most"}[m[1]]
	return fmt.Sprintf("has %d entries; want %s %s", len(l), words, m[2]), true
}

// notATime: a duration or time in another format.
func notATime(f fault) (string, bool) {
	if !strings.HasPrefix(f.format, "invalid value ") || !strings.Contains(f.format, "(does not satisfy ") || len(f.args) < 2 {
		return "", false
	}
	switch fmt.Sprint(f.args[1]) {
	case "time.Duration":
		return fmt.Sprintf("%v is not a duration; want a Go duration such as 90s, 10m or 24h", f.args[0]), true
	case "time.Time":
		return fmt.Sprintf("%v is not a time; want RFC 3339, such as 2026-01-02T15:04:05Z", f.args[0]), true
	}
	return "", false
}

// required: a required field that is missing.
func required(f fault) (string, bool) {
	if f.format != "field is required but not present" {
		return "", false
	}
	if !f.schema.Exists() {
		return "is required but missing", true
	}
	return "is required but missing; want " + wanted(f), true
}

// mustBe: the schemas' own messages ("must be a DNS label: ...") name what
// is wanted; the sentence adds the value.
func mustBe(f fault) (string, bool) {
	msg := fmt.Sprintf(f.format, f.args...)
	if !strings.HasPrefix(msg, "must be ") || !f.has {
		return "", false
	}
	switch f.data.(type) {
	case string, int64, float64, bool, *big.Int:
		return show(f.data) + " " + msg, true
	}
	return "", false
}

// wanted describes the schema's value at the fault, with an example where
// one is short: "an integer (int32), e.g. priority: 10", "an object with
// name (releaseRef: {name: my-release})".
func wanted(f fault) string {
	k := f.schema.IncompleteKind() &^ (cue.BottomKind | cue.NullKind)
	switch {
	case k == cue.IntKind:
		return fmt.Sprintf("an integer%s, e.g. %s", intType(f), writeAt(f.path, "10"))
	case k&cue.NumberKind != 0 && k&^cue.NumberKind == 0:
		return fmt.Sprintf("a number, e.g. %s", writeAt(f.path, "10"))
	case k == cue.BoolKind:
		return fmt.Sprintf("true or false, e.g. %s", writeAt(f.path, "true"))
	case k == cue.StringKind:
		if s, err := f.schema.String(); err == nil && f.schema.IsConcrete() {
			return writeAt(f.path, s)
		}
		return "a string"
	case k == cue.ListKind:
		return "a list"
	case k == cue.StructKind:
		fields := requiredFields(f.schema)
		if len(fields) == 0 {
			return fmt.Sprintf("an object (%s)", writeAt(f.path, "{key: value}"))
		}
		var ex []string
		for _, name := range fields {
			ex = append(ex, name+": "+example(f.field, name))
		}
		return fmt.Sprintf("an object with %s (%s)", strings.Join(fields, " and "), writeAt(f.path, "{"+strings.Join(ex, ", ")+"}"))
	}
	return "another kind of value"
}

var intTypes = regexp.MustCompile(`^u?int(8|16|32|64)$`)

// intType names the integer type CUE's message names: " (int32)".
func intType(f fault) string {
	for _, a := range f.args {
		if s := fmt.Sprint(a); intTypes.MatchString(s) {
			return " (" + s + ")"
		}
	}
	return ""
}

// writeAt writes value as a user would at path: "tag: 10", or "10" for an
// element of a list.
func writeAt(path, value string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			if _, err := strconv.Atoi(path[i+1 : len(path)-1]); err == nil {
				return value
			}
		}
	}
	key := path[strings.LastIndexByte(path, '.')+1:]
	if i := strings.LastIndex(path, `["`); strings.HasSuffix(path, `"]`) && i >= 0 {
		if u, err := strconv.Unquote(path[i+1 : len(path)-1]); err == nil {
			key = u
		}
	}
	return key + ": " + value
}

// example is a value for field name of the object field parent, from its
// name: releaseRef's name is my-release.
func example(parent, name string) string {
	if name == "name" && strings.HasSuffix(parent, "Ref") {
		return "my-" + kebab(strings.TrimSuffix(parent, "Ref"))
	}
	return "..."
}

// kebab writes componentVersion as component-version.
func kebab(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// requiredFields returns the names of the required fields of a struct schema.
func requiredFields(v cue.Value) []string {
	var out []string
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	for it.Next() {
		if it.Selector().ConstraintType() == cue.RequiredConstraint {
			out = append(out, it.Selector().Unquoted())
		}
	}
	return out
}

// kindOf is the CUE kind of a value as load decodes it.
func kindOf(v any) cue.Kind {
	switch v.(type) {
	case string:
		return cue.StringKind
	case int64, *big.Int:
		return cue.IntKind
	case float64:
		return cue.FloatKind
	case bool:
		return cue.BoolKind
	case map[string]any:
		return cue.StructKind
	case []any:
		return cue.ListKind
	case nil:
		return cue.NullKind
	}
	return cue.BottomKind
}

// kindWord names the kind of a value: "a string".
func kindWord(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64, *big.Int, float64:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return "null"
}

// show prints a value as a user would write it: strings quoted, numbers and
// booleans as they are, objects and lists by their kind.
func show(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}
