package validate

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/schemas"
)

// kindSchemas are the compiled schemas of every kind, in one CUE context. A
// context is not safe for concurrent use: each worker of check has its own.
type kindSchemas struct {
	kinds  map[string]cue.Value
	strict bool // Options.Strict
}

// compileSchemas compiles the embedded schemas in ctx.
func compileSchemas(ctx *cue.Context) (kindSchemas, error) {
	ks := kindSchemas{kinds: map[string]cue.Value{}}
	schema, err := Schemas(ctx)
	if err != nil {
		return ks, fmt.Errorf("compiling embedded schemas: %w", err)
	}
	iter, err := schema.LookupPath(cue.ParsePath("#Kinds")).Fields(cue.Definitions(true))
	if err != nil {
		return ks, fmt.Errorf("reading #Kinds of the embedded schemas: %w", err)
	}
	for iter.Next() {
		ks.kinds[iter.Selector().String()] = iter.Value()
	}
	return ks, nil
}

// checked is the schema step's result for one object: its cache key (when
// it has one) and its problems.
type checked struct {
	key      key
	hasKey   bool
	problems diag.List
}

// batch is how many objects a worker of check takes at a time.
const batch = 64

// check runs the schema step over objs on every core, each worker with its own
// CUE context; an object the cache knows passed is not checked again.
func (v *Validator) check(objs []*load.Object) []checked {
	out := make([]checked, len(objs))
	var next atomic.Int64
	work := func(ks kindSchemas) {
		for {
			start := int(next.Add(batch)) - batch
			if start >= len(objs) {
				return
			}
			for i := start; i < min(start+batch, len(objs)); i++ {
				c := &out[i]
				if v.cache != nil {
					c.key, c.hasKey = objectKey(objs[i])
				}
				if !c.hasKey || !v.cache.has(c.key) {
					c.problems = ks.check(objs[i])
				}
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), (len(objs)+batch-1)/batch) - 1 {
		// The embedded schemas compiled once already: this cannot fail, and
		// if it did the other workers would do the work.
		if ks, err := compileSchemas(cuecontext.New()); err == nil {
			ks.strict = v.strict
			wg.Go(func() { work(ks) })
		}
	}
	work(v.kindSchemas)
	wg.Wait()
	return out
}

// check checks one object against the schema of its kind.
func (ks kindSchemas) check(o *load.Object) diag.List {
	var problems diag.List
	if o.Kind == "" {
		problems.Errorf(o.File, o.Line, "kind", "missing kind")
		return problems
	}
	def, ok := ks.kinds[o.Kind]
	if !ok {
		line, col := o.PosOf("kind")
		msg := fmt.Sprintf("unknown kind %q; want one of %s", o.Kind, strings.Join(ks.kindNames(), ", "))
		if c := closest(o.Kind, ks.kindNames()); c != "" {
			msg = fmt.Sprintf("unknown kind %q; did you mean %s?", o.Kind, c)
		}
		problems.Addf(diag.Error, o.File, line, col, "kind", "%s", msg)
		return problems
	}
	fields, problems := withoutOpaque(o, ks.strict)
	for _, f := range faults(def, fields, o) {
		line, col := o.PosOf(f.path)
		problems.Addf(diag.Error, o.File, line, col, f.path, "%s", say(f))
	}
	return problems
}

func (ks kindSchemas) kindNames() []string {
	names := make([]string, 0, len(ks.kinds))
	for k := range ks.kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// fieldError is one schema violation at a CUE path (its selectors as
// text), with CUE's message.
type fieldError struct {
	path   []string
	format string
	args   []any
}

// fieldErrors returns the schema violations of v, the unification of a schema
// with data, looking into every field of data on its own: CUE's Validate stops at
// the first error of a list and reports missing required fields only when nothing
// else is wrong, and users want every problem at once. The deepest errors win: a
// rule over a struct's fields (exactly one of chart and componentVersionRef) sees
// a broken field as absent, so it speaks only when its fields are sound.
func fieldErrors(v cue.Value, data any) []fieldError {
	err := v.Validate(cue.Concrete(true))
	if err == nil {
		return nil
	}
	var out, rules []fieldError
	field := func(f cue.Value, data any) {
		if e := f.Err(); e != nil && notAllowed(e, len(f.Path().Selectors())) {
			// An unknown field: its own fields are not worth a word.
			out = append(out, fieldError{path: selectors(f), format: "field not allowed"})
			return
		}
		out = append(out, fieldErrors(f, data)...)
	}
	switch d := data.(type) {
	case map[string]any:
		seen := map[string]bool{}
		if it, e := v.Fields(cue.Optional(true), cue.Hidden(true)); e == nil {
			for it.Next() {
				sel := it.Selector()
				name := sel.String()
				if sel.LabelType() == cue.StringLabel {
					name = sel.Unquoted()
				}
				switch sel.ConstraintType() {
				case cue.OptionalConstraint:
					continue // optional and absent
				case cue.RequiredConstraint:
					out = append(out, fieldError{path: selectors(it.Value()), format: "field is required but not present"})
					continue
				}
				seen[name] = true
				if sel.LabelType() == cue.HiddenLabel {
					// A rule over the struct's fields, like exactly one of two.
					rules = append(rules, fieldErrors(it.Value(), nil)...)
					continue
				}
				field(it.Value(), d[name])
			}
		}
		for _, k := range slices.Sorted(maps.Keys(d)) {
			if f := v.LookupPath(cue.MakePath(cue.Str(k))); !seen[k] && f.Exists() {
				field(f, d[k])
			}
		}
	case []any:
		for i := range d {
			if e := v.LookupPath(cue.MakePath(cue.Index(i))); e.Exists() {
				field(e, d[i])
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	if len(rules) > 0 {
		return rules
	}
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		out = append(out, fieldError{path: e.Path(), format: format, args: args})
	}
	return out
}

// notAllowed reports whether err says that its value, at depth selectors, is a
// field the schema does not name (and not merely that one of its fields is).
func notAllowed(err error, depth int) bool {
	return slices.ContainsFunc(cueerrors.Errors(err), func(e cueerrors.Error) bool {
		format, _ := e.Msg()
		return format == "field not allowed" && len(e.Path()) == depth
	})
}

func selectors(v cue.Value) []string {
	sels := v.Path().Selectors()
	out := make([]string, len(sels))
	for i, s := range sels {
		out[i] = s.String()
	}
	return out
}

// label is one selector of a CUE path as text: a field name, a list index,
// or a hidden rule field (which reports on the struct that holds it).
type label struct {
	name   string
	index  int // >= 0 for a list index
	hidden bool
}

func parseLabel(s string) label {
	s = strings.TrimRight(s, "?!")
	if i, err := strconv.Atoi(s); err == nil {
		return label{index: i}
	}
	if u, err := strconv.Unquote(s); err == nil {
		s = u
	}
	return label{name: s, index: -1, hidden: strings.HasPrefix(s, "_")}
}

// cuePath converts the selectors of a CUE path to solar's field path.
func cuePath(sels []string) string {
	path := ""
	for _, s := range sels {
		switch l := parseLabel(s); {
		case l.hidden:
		case l.index >= 0:
			path = load.Index(path, l.index)
		default:
			path = load.Key(path, l.name)
		}
	}
	return path
}

// Schemas compiles the embedded schemas in ctx: the value whose definitions
// (#Target, #Kinds, …) the validator checks objects against. The CRD
// generator reads them too.
func Schemas(ctx *cue.Context) (cue.Value, error) {
	return compileDir(ctx, "schemas", schemas.FS, nil)
}
