package validate

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/policies"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// finding is what a policy reports, see policies/contract.cue.
type finding struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Path      string `json:"path"`
	Message   string `json:"message"`
}

// evalPolicies fills every policy's input with the valid objects and collects
// its deny and warn findings. keys are the valid objects' cache keys, nil when
// one has none.
func (v *Validator) evalPolicies(s *model.Set, valid []*load.Object, keys []key) diag.List {
	var problems diag.List
	k, results, ok := v.cache.policyResults(keys)
	if !ok {
		var err error
		if results, err = v.evaluate(s, valid); err != nil {
			problems.Errorf("", 0, "", "evaluating policies: %v", err)
			return problems
		}
		v.cache.setPolicyResults(k, results)
	}
	for _, r := range results {
		if r.Broken != nil {
			problems = append(problems, *r.Broken)
			continue
		}
		f := r.Finding
		p := diag.Problem{Path: f.Path, Message: fmt.Sprintf("%s (policy %s)", f.Message, r.Rule), Severity: r.Severity}
		if o := s.Loaded(f.Kind, f.Namespace, f.Name); o != nil {
			p.File, p.Line = o.File, o.LineOf(f.Path)
		}
		problems = append(problems, p)
	}
	return problems
}

// evaluate runs the policies on the valid objects: the embedded ones a part
// of the input at a time (embeddedParts), a policy of the user's on the
// whole.
func (v *Validator) evaluate(s *model.Set, valid []*load.Object) ([]policyResult, error) {
	bindings, err := s.Bindings()
	if err != nil {
		return nil, err
	}
	if len(v.policies) > 1 {
		return v.policyResults(policyInput(s, valid, bindings)), nil
	}
	var agent []model.Binding
	for _, b := range bindings {
		if b.Release.Annotations[api.AnnotationTargetCredential] == "true" {
			agent = append(agent, b)
		}
	}
	var results []policyResult
	for _, p := range embeddedParts(s, valid, agent) {
		results = append(results, v.policyResults(policyInput(s, p.objects, p.bindings))...)
	}
	return results, nil
}

// policyInput is what every policy sees as input: the objects by kind,
// namespace and name, the PipelineConfig and the bindings. The embedded
// policies read only the bindings of agent Releases and the objects of
// embeddedKinds, and are given only those. CUE's encoding of the 50,000
// bindings of 10,000 Targets was 177 MB, half the peak heap of a cold
// render; that of the 100,000 Targets of 100,000, 0.5 GB of the 1.2 GB live
// heap of a vet.
func policyInput(s *model.Set, objs []*load.Object, bs []model.Binding) map[string]any {
	objects := map[string]map[string]map[string]any{}
	// Every kind is present in input.objects, so policies may range over
	// any kind without checking that it exists.
	for _, k := range api.Kinds {
		objects[k] = map[string]map[string]any{}
	}
	for _, o := range objs {
		if objects[o.Kind][o.Namespace] == nil {
			objects[o.Kind][o.Namespace] = map[string]any{}
		}
		// Policies see the user's opaque data as empty: see opaque.
		objects[o.Kind][o.Namespace][o.Name], _ = withoutOpaque(o, false)
	}
	config := map[string]any{"metadata": map[string]any{"name": "", "namespace": ""}, "spec": map[string]any{}}
	if len(s.PipelineConfigs) > 0 {
		c := s.PipelineConfigs[0]
		config = s.Loaded(api.KindPipelineConfig, c.Namespace, c.Name).Fields
	}
	type ref struct {
		Kind      string `json:"kind,omitempty"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	type binding struct {
		Target  ref `json:"target"`
		Release ref `json:"release"`
		Via     ref `json:"via"`
	}
	bindings := make([]binding, 0, len(bs))
	for _, b := range bs {
		bindings = append(bindings, binding{
			Target:  ref{Namespace: b.Target.Namespace, Name: b.Target.Name},
			Release: ref{Namespace: b.Release.Namespace, Name: b.Release.Name},
			Via:     ref{Kind: b.Via.Kind, Namespace: b.Via.Namespace, Name: b.Via.Name},
		})
	}
	return map[string]any{"objects": objects, "config": config, "bindings": bindings}
}

// embeddedKinds are the kinds of input.objects the embedded policies read
// (TestEmbeddedPoliciesReadOnlyTheirKinds holds them to it).
var embeddedKinds = []string{api.KindRelease, api.KindRegistry, api.KindComponentVersion}

// policyResult is one thing a policy said: a finding of one of its rules, or,
// for a broken policy, the error at the policy's own position.
type policyResult struct {
	Severity diag.Severity `json:"severity"`
	Rule     string        `json:"rule,omitempty"`
	Finding  *finding      `json:"finding,omitempty"`
	Broken   *diag.Problem `json:"broken,omitempty"`
}

// policyResults evaluates every policy on input.
func (v *Validator) policyResults(input map[string]any) []policyResult {
	var results []policyResult
	in := v.ctx.Encode(input)
	for _, p := range v.policies {
		val := p.value.FillPath(cue.ParsePath("input"), in)
		for _, sev := range []diag.Severity{diag.Error, diag.Warning} {
			field := map[diag.Severity]string{diag.Error: "deny", diag.Warning: "warn"}[sev]
			var found map[string][]finding
			out := val.LookupPath(cue.ParsePath(field))
			err := out.Validate(cue.Concrete(true))
			if err == nil {
				err = out.Decode(&found)
			}
			if err != nil {
				for _, e := range cueerrors.Errors(err) {
					file, line := policyPos(e)
					format, args := e.Msg()
					results = append(results, policyResult{Severity: diag.Error, Broken: &diag.Problem{File: file, Line: line,
						Path: cuePath(e.Path()), Message: fmt.Sprintf("policy %s: %s", p.name, fmt.Sprintf(format, args...)), Severity: diag.Error}})
				}
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(found)) {
				for _, f := range found[name] {
					results = append(results, policyResult{Severity: sev, Rule: name, Finding: &f})
				}
			}
		}
	}
	return results
}

// policyPos returns where a policy error is: the first position in a policy file
// rather than in the contract, which every finding passes through.
func policyPos(e cueerrors.Error) (string, int) {
	var first token.Pos
	for _, pos := range cueerrors.Positions(e) {
		if !pos.IsValid() {
			continue
		}
		if filepath.Base(pos.Filename()) != policies.Contract {
			return pos.Filename(), pos.Line()
		}
		if !first.IsValid() {
			first = pos
		}
	}
	if first.IsValid() {
		return first.Filename(), first.Line()
	}
	return "", 0
}
