package resolve

import (
	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/model"
)

// Resolve resolves every Target of the set.
func Resolve(s *model.Set, opts Options) (*Plan, error) {
	r, err := NewResolver(s, opts)
	if err != nil {
		return nil, err
	}
	plan := &Plan{}
	for _, t := range s.Targets {
		plan.Targets = append(plan.Targets, r.Resolve(t))
	}
	return plan, nil
}

// Resolver resolves the Targets of one set one at a time, so that a run
// may hold the resolutions of a namespace at a time rather than all.
type Resolver struct {
	s           *model.Set
	opts        Options
	byTarget    map[*model.Target][]model.Binding
	regBindings map[*model.Target][]*model.RegistryBinding
	site        siteMirror
}

// NewResolver indexes the set's bindings for Resolve.
func NewResolver(s *model.Set, opts Options) (*Resolver, error) {
	bindings, err := s.Bindings()
	if err != nil {
		return nil, err
	}
	r := &Resolver{s: s, opts: opts, byTarget: map[*model.Target][]model.Binding{}, regBindings: map[*model.Target][]*model.RegistryBinding{}}
	// Sorted by Target: each Target's bindings are one run of the list,
	// shared rather than copied (clipped: appending copies).
	for i := 0; i < len(bindings); {
		t, j := bindings[i].Target, i+1
		for j < len(bindings) && bindings[j].Target == t {
			j++
		}
		if prev := r.byTarget[t]; prev != nil {
			r.byTarget[t] = append(prev, bindings[i:j]...)
		} else {
			r.byTarget[t] = bindings[i:j:j]
		}
		i = j
	}
	// RegistryBindings whose targetRef does not resolve bind nothing; vet
	// reports them.
	for _, b := range s.RegistryBindings {
		if t, err := model.Lookup[model.Target](s, api.KindRegistryBinding, b.Namespace, api.KindTarget, b.Spec.TargetRef); err == nil {
			r.regBindings[t] = append(r.regBindings[t], b)
		}
	}
	r.site.mirror, r.site.config, r.site.err = mirrorOf(s)
	return r, nil
}

// Resolve resolves Target t of the resolver's set.
func (r *Resolver) Resolve(t *model.Target) *Resolution {
	return resolveTarget(r.s, t, r.byTarget[t], r.regBindings[t], r.site, r.opts)
}
