package validate

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"

	"github.com/solar-pipeline/solar/policies"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// Options configures a Validator. The zero value uses the embedded schemas and
// policies only.
type Options struct {
	// PolicyDirs are directories of CUE policy files (package policy), each
	// evaluated after the embedded policies.
	PolicyDirs []string
	// CacheDir, when set, holds what validation found (see cache): a run on
	// objects already checked by the same schemas and policies skips the CUE
	// steps for them.
	CacheDir string
	// CacheReadOnly uses the cache without writing it (a dry run).
	CacheReadOnly bool
	// Strict makes errors of validation's warnings: a Profile that matches
	// no Target, a Target that gets no release, data that reads otherwise
	// than written (an unquoted 1.10 in a Release's values is the number 1.1).
	Strict bool
}

// Validator holds the compiled schemas and policies. It is not safe for
// concurrent use.
type Validator struct {
	ctx *cue.Context
	kindSchemas
	policies []policy
	cache    *cache
	readOnly bool
	strict   bool
	// checked and decoded are what Check found, until Finish: the schema
	// step's results and the slimmed objects' typed forms.
	checked map[*load.Object]checked
	decoded map[*load.Object]any
	slimmer *model.Slimmer
}

// policy is one compiled policy directory.
type policy struct {
	name  string
	value cue.Value
}

// New compiles the schemas and policies.
func New(opts Options) (*Validator, error) {
	ctx := cuecontext.New()
	ks, err := compileSchemas(ctx)
	if err != nil {
		return nil, err
	}
	ks.strict = opts.Strict
	v := &Validator{ctx: ctx, kindSchemas: ks, cache: openCache(opts.CacheDir, opts.PolicyDirs), readOnly: opts.CacheReadOnly,
		strict: opts.Strict}

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
	return v.Finish(objs)
}

// Check runs the schema step of Validate on objs, a part of the input as it
// is read (load.Options.Each), and keeps what it found for Finish. A Target
// that passed without a problem is decoded and slimmed (model.Slimmer) unless
// a policy of the user's sees the whole input: only its typed form and its
// positions stay in memory.
func (v *Validator) Check(objs []*load.Object) {
	v.keep(objs, len(v.policies) == 1)
}

// keep runs the schema step on objs and keeps its results; slim, it slims
// the Targets that passed without a problem. Only objects that the
// validator's caller loaded for it (Check) are slimmed: objects given to
// Validate are the caller's, and stay as they are.
func (v *Validator) keep(objs []*load.Object, slim bool) {
	if v.checked == nil {
		v.checked, v.decoded, v.slimmer = map[*load.Object]checked{}, map[*load.Object]any{}, &model.Slimmer{}
	}
	for i, c := range v.check(objs) {
		o := objs[i]
		v.checked[o] = c
		if !slim || len(c.problems) > 0 {
			continue
		}
		if typed, err := v.slimmer.Slim(o); err == nil && typed != nil {
			v.decoded[o] = typed
		}
	}
}

// Finish validates objs, every object of the input, as Validate does: the
// schema step of those Check has not seen, then the references, rollouts,
// bindings and policies of the whole.
func (v *Validator) Finish(objs []*load.Object) (*model.Set, diag.List) {
	var unchecked []*load.Object
	for _, o := range objs {
		if _, ok := v.checked[o]; !ok {
			unchecked = append(unchecked, o)
		}
	}
	if len(unchecked) > 0 {
		v.keep(unchecked, false)
	}
	decoded := v.decoded
	defer func() { v.checked, v.decoded, v.slimmer = nil, nil, nil }()
	var (
		problems diag.List
		valid    []*load.Object
		keys     []key // of the valid objects
		keyless  bool  // a valid object has no key, or has warnings: the policy results are not cached
		invalid  = map[load.ID]*load.Object{}
	)
	for _, o := range objs {
		c := v.checked[o]
		problems = append(problems, c.problems...)
		if c.problems.HasErrors() {
			invalid[o.ID()] = o
			continue
		}
		// A warning leaves the object valid; the cache keeps only objects
		// without any problem, so that each run reports the warning again.
		valid = append(valid, o)
		if c.hasKey && len(c.problems) == 0 {
			keys = append(keys, c.key)
			v.cache.keep(c.key)
		}
		keyless = keyless || !c.hasKey || len(c.problems) > 0
	}
	set, err := model.NewSetOf(valid, decoded)
	if err != nil {
		// The schemas admit only what the model decodes; this is a bug.
		problems.Errorf("", 0, "", "internal error: %v", err)
		return nil, problems
	}
	problems = append(problems, references(set, invalid)...)
	problems = append(problems, rollouts(set)...)
	problems = append(problems, unbound(set, invalid, v.strict)...)
	if keyless {
		keys = nil
	}
	problems = append(problems, v.evalPolicies(set, valid, keys)...)
	if !v.readOnly {
		v.cache.save()
	}
	return set, problems.Sorted()
}
