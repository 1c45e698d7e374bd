package load

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/solar-pipeline/solar/renderer/diag"
)

// Options controls loading. The zero value is ready to use.
type Options struct {
	// Namespace is given to objects without metadata.namespace. Default "default".
	Namespace string
	// Exclude are patterns in .solarignore (gitignore) syntax, relative to
	// each walked directory, of files and folders to leave out.
	Exclude []string
	// Strict makes objects of other API groups errors, and reads every walked
	// file as objects.
	Strict bool
	// Stdin is read for the path "-".
	Stdin io.Reader
	// MaxFileSize bounds one file's size; 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// Each, when set, is called by Paths with the Solar objects of each
	// group of files as they are read, in file order, before Paths reads
	// the next group: a caller may check them there and drop what it no
	// longer needs of them (validate.Validator.Check), so that the whole
	// input is never in memory as read.
	Each func([]*Object)
}

func (o Options) namespace() string {
	if o.Namespace == "" {
		return "default"
	}
	return o.Namespace
}

// maxNodes bounds the YAML nodes one file may expand to, aliases included,
// so that a small file of nested aliases cannot exhaust memory or time; a
// larger file may hold one for every two of its bytes (budget), so that a
// file of 100,000 Targets (21 MB, 2.2 million values) loads, and what it may
// expand to still grows only with its size (--max-file-size).
const maxNodes = 1 << 20

// budget is how many values a file of size bytes may expand to.
func budget(size int) int { return max(maxNodes, size/2) }

// duplicates reports every object whose kind/namespace/name was seen before,
// naming both places.
func duplicates(objs []*Object) diag.List {
	var problems diag.List
	seen := make(map[ID]*Object, len(objs))
	for _, o := range objs {
		if o.Kind == "" || o.Name == "" {
			continue
		}
		if first, ok := seen[o.ID()]; ok {
			line, col := o.PosOf("metadata.name")
			firstLine, _ := first.PosOf("metadata.name")
			problems.Addf(diag.Error, o.File, line, col, "metadata.name", "duplicate %s, first defined at %s:%d", o.ID(), first.File, firstLine)
			continue
		}
		seen[o.ID()] = o
	}
	return problems
}

// Bytes loads the objects of one file's content; name is the file name used in
// positions. It does not look for duplicates across calls.
func Bytes(name string, data []byte, opts Options) ([]*Object, diag.List) {
	var (
		objs     []*Object
		problems diag.List
	)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	// One budget for the whole file: many documents may not each expand.
	c := &converter{file: name, budget: budget(len(data)), limit: budget(len(data))}
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line, col, msg := syntaxError(data, err)
			problems.Addf(diag.Error, name, line, col, "", "syntax error: %s", msg)
			// The decoder cannot resume after a syntax error.
			break
		}
		objs = append(objs, c.document(&doc, opts.namespace())...)
		if c.budget < 0 {
			break // the file's budget is spent: it was reported once
		}
	}
	return objs, append(problems, c.problems...)
}

// maxDepth bounds how deeply values nest.
const maxDepth = 1000

// converter turns one YAML document into objects, recording field lines.
type converter struct {
	file     string
	budget   int
	limit    int // the file's budget, for the message
	lines    map[string]pos
	literals map[string]string
	problems diag.List
	// expanding are the anchored values being converted: an alias to one
	// of them is inside the value it refers to.
	expanding map[*yaml.Node]bool
	depth     int
}

func (c *converter) document(doc *yaml.Node, namespace string) []*Object {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // an empty document: only comments, or nothing between ---
	}
	root := doc.Content[0]
	items := listItems(root)
	if items == nil {
		if o := c.object(root, "", namespace); o != nil {
			return []*Object{o}
		}
		return nil
	}
	var objs []*Object
	for i, item := range items.Content {
		if o := c.object(item, Index("items", i), namespace); o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

// listItems returns the items of a kind: List document, or nil.
func listItems(root *yaml.Node) *yaml.Node {
	if root.Kind != yaml.MappingNode {
		return nil
	}
	var kind, items *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "kind":
			kind = root.Content[i+1]
		case "items":
			items = root.Content[i+1]
		}
	}
	if kind == nil || kind.Value != "List" || items == nil || items.Kind != yaml.SequenceNode {
		return nil
	}
	return items
}

const notAnObject = "not an object"

// object converts the node of one object; where names it in problems (items[N] of
// a List, or empty for a whole document).
func (c *converter) object(n *yaml.Node, where string, namespace string) *Object {
	c.lines, c.literals = map[string]pos{}, nil
	v, ok := c.value(n, "")
	if !ok || v == nil {
		return nil // broken (already reported), or a document holding only null
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		c.problems.Errorf(c.file, n.Line, where, notAnObject+" (found %s)", kindName(v))
		return nil
	}
	o := &Object{File: c.file, Line: n.Line, Fields: m, lines: positions(c.lines), literals: c.literals}
	o.APIVersion, _ = m["apiVersion"].(string)
	o.Kind, _ = m["kind"].(string)
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, f := range serverSet {
			delete(meta, f)
		}
		o.Name, _ = meta["name"].(string)
		if _, set := meta["namespace"]; !set {
			meta["namespace"] = namespace
		}
		o.Namespace, _ = meta["namespace"].(string)
	}
	return o
}

// serverSet lists the metadata fields the API server sets; exported objects
// carry them, and they mean nothing as input.
var serverSet = []string{
	"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "selfLink", "managedFields",
}

// value converts a node, recording the line of every field under path.
func (c *converter) value(n *yaml.Node, path string) (any, bool) {
	c.budget--
	if c.budget < 0 {
		if c.budget == -1 {
			c.problems.Errorf(c.file, n.Line, path, "document expands to more than %d values (too many aliases?)", c.limit)
		}
		return nil, false
	}
	if _, seen := c.lines[path]; !seen {
		c.lines[path] = pos{int32(n.Line), int32(n.Column)}
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxDepth {
		if len(path) > 80 {
			path = path[:80] + "..."
		}
		c.problems.Errorf(c.file, n.Line, path, "values nest more than %d levels deep", maxDepth)
		c.budget = -2 // report once, stop converting
		return nil, false
	}
	if n.Anchor != "" {
		if c.expanding == nil {
			c.expanding = map[*yaml.Node]bool{}
		}
		c.expanding[n] = true
		defer delete(c.expanding, n)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if c.expanding[n.Alias] {
			c.problems.Errorf(c.file, n.Line, path, "alias *%s refers to the value it is in", n.Value)
			return nil, false
		}
		return c.value(n.Alias, path)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		keyLines := make(map[string]int, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				c.problems.Errorf(c.file, k.Line, path, "unsupported mapping key (keys must be plain strings; merge keys << are not supported)")
				ok = false
				continue
			}
			if first, dup := keyLines[k.Value]; dup {
				c.problems.Errorf(c.file, k.Line, Key(path, k.Value), "duplicate field, first set at line %d", first)
				ok = false
				continue
			}
			keyLines[k.Value] = k.Line
			fp := Key(path, k.Value)
			c.lines[fp] = pos{int32(k.Line), int32(k.Column)}
			fv, fok := c.value(v, fp)
			ok = ok && fok
			m[k.Value] = fv
		}
		return m, ok
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		ok := true
		for i, e := range n.Content {
			ev, eok := c.value(e, Index(path, i))
			ok = ok && eok
			l = append(l, ev)
		}
		return l, ok
	case yaml.ScalarNode:
		return c.scalar(n, path)
	}
	c.problems.Errorf(c.file, n.Line, path, "unsupported YAML node")
	return nil, false
}

func (c *converter) scalar(n *yaml.Node, path string) (any, bool) {
	switch n.ShortTag() {
	case "!!null":
		return nil, true
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			if !plainInt(n.Value) { // 0x1F, 0o17, +5: rare, and worth a word
				c.literal(path, n.Value, strconv.FormatInt(i, 10))
			}
			return i, true
		}
	case "!!float":
		// YAML resolves an integer beyond int64 as a float: keep it exact, so
		// validation can say it is out of range and charts get every digit.
		if b, ok := new(big.Int).SetString(n.Value, 10); ok {
			return b, true
		}
		var f float64
		if err := n.Decode(&f); err == nil {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				c.problems.Errorf(c.file, n.Line, path, "%s is not a number JSON can carry: write a finite number, or quote it as a string", n.Value)
				return nil, false
			}
			c.literal(path, n.Value, strconv.FormatFloat(f, 'g', -1, 64))
			return f, true
		}
	case "!!bool":
		var v any
		if err := n.Decode(&v); err == nil {
			return v, true
		}
	default:
		// Strings, timestamps (kept as written, as Kubernetes does) and custom tags.
		return n.Value, true
	}
	c.problems.Errorf(c.file, n.Line, path, "invalid %s %q", strings.TrimPrefix(n.ShortTag(), "!!"), n.Value)
	return nil, false
}

// literal remembers the text of a number that reads as another number than
// written (1.10 as 1.1): errors and warnings about it show both.
func (c *converter) literal(path, written, read string) {
	if written == read {
		return
	}
	if c.literals == nil {
		c.literals = map[string]string{}
	}
	c.literals[path] = written
}

// plainInt reports whether s is an integer as strconv.FormatInt writes it.
func plainInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func kindName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}
