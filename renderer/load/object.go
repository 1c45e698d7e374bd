package load

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unique"
)

// Object is one SolAr object as read from a file.
type Object struct {
	// File and Line locate the object's first field.
	File string
	Line int
	// APIVersion, Kind, Namespace and Name are copied out of Fields; any may be
	// empty when the object lacks them (validation reports that).
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// Fields is the object as decoded: map[string]any, []any, string, int64
	// (*big.Int beyond), float64, bool and nil. It holds metadata.namespace (defaulted) and no
	// server-set fields.
	Fields map[string]any

	// lines: where each field (its path built by Key and Index) is
	// written: its key's position, or for a list element, the element's
	// (positions).
	lines fieldLines
	// literals: field path -> the text of a number that reads as another
	// number than written (1.10 reads as 1.1); see Literal.
	literals map[string]string
}

// pos is a 1-based line and column (int32: 100,000 Targets hold about
// 1.5 million of them).
type pos struct{ line, col int32 }

// fieldLines are where an object's fields are written. A small object's
// are paths, its fields' paths in order joined by NUL and interned (objects
// of one shape, 100,000 Targets, share one string; a path of Key and Index
// never holds a NUL), and at, the position of each: found by a scan. A
// large object's (many, a long values tree) are its own list, sorted by
// path, found by a binary search: a scan would make its problems' lines
// cost the square of its size.
type fieldLines struct {
	paths unique.Handle[string]
	at    []pos
	large []fieldPos
}

// fieldPos is where the field at path is written.
type fieldPos struct {
	path string
	pos
}

// scanned is the most fields an object's fieldLines scans.
const scanned = 64

// positions are the positions of fields as fieldLines: 100,000 Targets
// held a path and a position per field each, 45 MB.
func positions(lines map[string]pos) fieldLines {
	paths := slices.Sorted(maps.Keys(lines))
	if len(paths) > scanned {
		large := make([]fieldPos, len(paths))
		for i, p := range paths {
			large[i] = fieldPos{path: unique.Make(p).Value(), pos: lines[p]}
		}
		return fieldLines{large: large}
	}
	at := make([]pos, len(paths))
	for i, p := range paths {
		at[i] = lines[p]
	}
	return fieldLines{paths: unique.Make(strings.Join(paths, "\x00")), at: at}
}

// find is the position of the field at path.
func (f fieldLines) find(path string) (pos, bool) {
	if f.large != nil {
		i, ok := slices.BinarySearchFunc(f.large, path, func(f fieldPos, path string) int { return strings.Compare(f.path, path) })
		if !ok {
			return pos{}, false
		}
		return f.large[i].pos, true
	}
	if len(f.at) == 0 {
		return pos{}, false
	}
	rest := f.paths.Value()
	for i := range f.at {
		p, after, _ := strings.Cut(rest, "\x00")
		if p == path {
			return f.at[i], true
		}
		rest = after
	}
	return pos{}, false
}

// ID is the identity of an object: two objects with the same ID are duplicates.
type ID struct {
	Kind, Namespace, Name string
}

func (id ID) String() string {
	return fmt.Sprintf("%s %s/%s", id.Kind, id.Namespace, id.Name)
}

// ID returns the object's identity.
func (o *Object) ID() ID {
	return ID{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// Pos returns "FILE:LINE" of the object.
func (o *Object) Pos() string {
	return fmt.Sprintf("%s:%d", o.File, o.Line)
}

// LineOf returns the line of the field at path (as built by Key and Index), or of
// its nearest enclosing field that exists, or of the object itself.
func (o *Object) LineOf(path string) int {
	line, _ := o.PosOf(path)
	return line
}

// PosOf returns the line and column of the field at path, as LineOf finds it;
// the column is 0 when it falls back to the object itself.
func (o *Object) PosOf(path string) (line, col int) {
	for path != "" {
		if p, ok := o.lines.find(path); ok {
			return int(p.line), int(p.col)
		}
		path = trimLast(path)
	}
	return o.Line, 0
}

// Literal returns the text of the number at path when it reads as another
// number than written: 1.10 (read as 1.1), 0x1F, 1e3. A version or tag written
// without quotes is such a number.
func (o *Object) Literal(path string) (string, bool) {
	s, ok := o.literals[path]
	return s, ok
}

// trimLast drops the last segment of a path built by Key and Index: .name,
// ["quoted"] or [N].
func trimLast(path string) string {
	if path[len(path)-1] == ']' {
		// A quoted key may hold any character, so find its opening bracket by
		// unquoting candidates from the right.
		for i := len(path) - 2; i >= 0; i-- {
			if path[i] != '[' {
				continue
			}
			inner := path[i+1 : len(path)-1]
			if _, err := strconv.Atoi(inner); err == nil {
				return path[:i]
			}
			if _, err := strconv.Unquote(inner); err == nil {
				return path[:i]
			}
		}
		return ""
	}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '.' {
			return path[:i]
		}
	}
	return ""
}

// Key returns the path of field key inside path: spec.name, or
// metadata.labels["app.kubernetes.io/name"] when key is not a plain identifier.
func Key(path, key string) string {
	if !isIdent(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index returns the path of element i of the list at path.
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '-'):
		default:
			return false
		}
	}
	return true
}
