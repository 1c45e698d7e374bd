package validate

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"

	"github.com/solar-pipeline/solar/policies"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/schemas"
)

// Options configures a Validator. The zero value uses the embedded schemas and
// policies only.
type Options struct {
	// PolicyDirs are directories of CUE policy files (package policy), each
	// evaluated after the embedded policies.
	PolicyDirs []string
}

// Validator holds the compiled schemas and policies. It is not safe for
// concurrent use.
type Validator struct {
	ctx      *cue.Context
	kinds    map[string]cue.Value
	policies []policy
}

// policy is one compiled policy directory.
type policy struct {
	name  string
	value cue.Value
}

// New compiles the schemas and policies.
func New(opts Options) (*Validator, error) {
	ctx := cuecontext.New()
	v := &Validator{ctx: ctx, kinds: map[string]cue.Value{}}

	schema, err := compileDir(ctx, "schemas", schemas.FS, nil)
	if err != nil {
		return nil, fmt.Errorf("compiling embedded schemas: %w", err)
	}
	iter, err := schema.LookupPath(cue.ParsePath("#Kinds")).Fields(cue.Definitions(true))
	if err != nil {
		return nil, fmt.Errorf("reading #Kinds of the embedded schemas: %w", err)
	}
	for iter.Next() {
		v.kinds[iter.Selector().String()] = iter.Value()
	}

	contract, err := fs.ReadFile(policies.FS, policies.Contract)
	if err != nil {
		return nil, err
	}
	builtin, err := compileDir(ctx, "embedded policies", policies.FS, nil)
	if err != nil {
		return nil, fmt.Errorf("compiling embedded policies: %w", err)
	}
	v.policies = append(v.policies, policy{name: "embedded", value: builtin})
	for _, dir := range opts.PolicyDirs {
		val, err := compileDir(ctx, dir, os.DirFS(dir), contract)
		if err != nil {
			return nil, fmt.Errorf("compiling policies in %s: %w", dir, err)
		}
		v.policies = append(v.policies, policy{name: dir, value: val})
	}
	return v, nil
}

// compileDir compiles the .cue files at the root of fsys as one package, plus the
// policy contract when given. Positions name files as dir/file.
func compileDir(ctx *cue.Context, dir string, fsys fs.FS, contract []byte) (cue.Value, error) {
	names, err := fs.Glob(fsys, "*.cue")
	if err != nil {
		return cue.Value{}, err
	}
	if len(names) == 0 {
		return cue.Value{}, fmt.Errorf("no .cue files")
	}
	inst := build.NewContext().NewInstance(dir, nil)
	for _, n := range names {
		src, err := fs.ReadFile(fsys, n)
		if err != nil {
			return cue.Value{}, err
		}
		if err := inst.AddFile(filepath.Join(dir, n), src); err != nil {
			return cue.Value{}, err
		}
	}
	if contract != nil && !slices.Contains(names, policies.Contract) {
		if err := inst.AddFile(filepath.Join(dir, "(solar)", policies.Contract), contract); err != nil {
			return cue.Value{}, err
		}
	}
	val := ctx.BuildInstance(inst)
	if err := val.Err(); err != nil {
		return cue.Value{}, fmt.Errorf("%s", cueerrors.Details(err, nil))
	}
	return val, nil
}

// Validate checks objs and returns the valid objects as a Set with every problem
// found. Reference checks and policies see only the objects that passed the
// schemas, so one broken object does not cause a cascade of problems.
func (v *Validator) Validate(objs []*load.Object) (*model.Set, diag.List) {
	var (
		problems diag.List
		valid    []*load.Object
		invalid  = map[load.ID]*load.Object{}
	)
	for _, o := range objs {
		p := v.schema(o)
		if len(p) == 0 {
			valid = append(valid, o)
		} else {
			invalid[o.ID()] = o
		}
		problems = append(problems, p...)
	}
	set, err := model.NewSet(valid)
	if err != nil {
		// The schemas admit only what the model decodes; this is a bug.
		problems.Errorf("", 0, "", "internal error: %v", err)
		return nil, problems
	}
	problems = append(problems, references(set, invalid)...)
	problems = append(problems, v.evalPolicies(set, valid)...)
	return set, problems.Sorted()
}

// schema checks one object against the schema of its kind.
func (v *Validator) schema(o *load.Object) diag.List {
	var problems diag.List
	if o.Kind == "" {
		problems.Errorf(o.File, o.Line, "kind", "missing kind")
		return problems
	}
	def, ok := v.kinds[o.Kind]
	if !ok {
		problems.Errorf(o.File, o.LineOf("kind"), "kind", "unknown kind %q; want one of %s", o.Kind, strings.Join(v.kindNames(), ", "))
		return problems
	}
	prefix := len(def.Path().Selectors())
	fields, problems := withoutOpaque(o)
	// One problem per field: a value that breaks two constraints makes CUE report
	// the second as a consequence of the first; the shortest message is the cause.
	byPath := map[string]string{}
	for _, e := range fieldErrors(def.Unify(v.ctx.Encode(fields)), fields) {
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

func (v *Validator) kindNames() []string {
	names := make([]string, 0, len(v.kinds))
	for k := range v.kinds {
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
