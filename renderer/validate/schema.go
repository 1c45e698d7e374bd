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
	kinds map[string]cue.Value
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
		problems.Errorf(o.File, o.LineOf("kind"), "kind", "unknown kind %q; want one of %s", o.Kind, strings.Join(ks.kindNames(), ", "))
		return problems
	}
	prefix := len(def.Path().Selectors())
	fields, problems := withoutOpaque(o)
	// One problem per field: a value that breaks two constraints makes CUE report
	// the second as a consequence of the first; the shortest message is the cause.
	byPath := map[string]string{}
	for _, e := range fieldErrors(def.Unify(def.Context().Encode(fields)), fields) {
		path := cuePath(e.path[min(prefix, len(e.path)):])
		if msg, ok := byPath[path]; !ok || len(e.msg) < len(msg) {
			byPath[path] = e.msg
		}
	}
	for path, msg := range byPath {
		problems.Errorf(o.File, o.LineOf(path), path, "%s", msg)
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

// fieldError is one schema violation at a CUE path.
type fieldError struct {
	path []string
	msg  string
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
			out = append(out, fieldError{path: selectors(f), msg: "field not allowed"})
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
					out = append(out, fieldError{path: selectors(it.Value()), msg: "field is required but not present"})
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
		out = append(out, fieldError{path: e.Path(), msg: fmt.Sprintf(format, args...)})
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

// cuePath converts the selectors of a CUE path to solar's field path.
func cuePath(sels []string) string {
	path := ""
	for _, s := range sels {
		if strings.HasPrefix(s, "_") {
			continue // a hidden rule field reports on the struct that holds it
		}
		s = strings.TrimRight(s, "?!")
		if i, err := strconv.Atoi(s); err == nil {
			path = load.Index(path, i)
			continue
		}
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
		path = load.Key(path, s)
	}
	return path
}

// Schemas compiles the embedded schemas in ctx: the value whose definitions
// (#Target, #Kinds, …) the validator checks objects against. The CRD
// generator reads them too.
func Schemas(ctx *cue.Context) (cue.Value, error) {
	return compileDir(ctx, "schemas", schemas.FS, nil)
}
