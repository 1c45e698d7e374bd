package validate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// unbound reports what binds nothing: a Profile that matches no Target and
// a Target that gets no release, naming the ReferenceGrant that is missing
// when that is why. Both are warnings (a Target may wait for its first
// release; its bootstrap chart then installs nothing), errors with strict.
// Where another problem may be the cause (an object of a kind that binds
// failed its schema, a ReleaseBinding of the Target does not resolve, the
// Target's own references fail), it is left to that problem: no cascade.
func unbound(s *model.Set, invalid map[load.ID]*load.Object, strict bool) diag.List {
	bindings, err := s.Bindings()
	if err != nil {
		return nil // an invalid selector: the schemas report it
	}
	u := &unbinder{s: s, strict: strict, profiles: bindable(s), bound: map[*model.Target]bool{}, matched: map[load.ID]bool{}}
	for _, b := range bindings {
		u.bound[b.Target], u.matched[*b.Via] = true, true
	}
	invalidKinds := map[string]bool{}
	for id := range invalid {
		invalidKinds[id.Kind] = true
	}
	if !invalidKinds[api.KindTarget] && !invalidKinds[api.KindReferenceGrant] {
		u.profilesWithoutTarget()
	}
	if !invalidKinds[api.KindProfile] && !invalidKinds[api.KindRelease] &&
		!invalidKinds[api.KindReleaseBinding] && !invalidKinds[api.KindReferenceGrant] {
		u.targetsWithoutRelease()
	}
	return u.problems
}

// unbinder holds what unbound works from.
type unbinder struct {
	s        *model.Set
	strict   bool
	profiles []*profile
	bound    map[*model.Target]bool
	matched  map[load.ID]bool // Profiles and ReleaseBindings that bind
	problems diag.List
}

// profile is a Profile that binds: its Release exists and its selector
// parses (else vet reports it elsewhere).
type profile struct {
	*model.Profile
	sel labels.Selector
}

// bindable are the Profiles that bind their Release wherever they match.
func bindable(s *model.Set) []*profile {
	var out []*profile
	for _, p := range s.Profiles {
		if model.Get[model.Release](s, api.KindRelease, p.Namespace, p.Spec.ReleaseRef.Name) == nil {
			continue // a missing Release is reported as such
		}
		if sel, err := model.Selector(p.Spec.TargetSelector); err == nil {
			out = append(out, &profile{Profile: p, sel: sel})
		}
	}
	return out
}

func (u *unbinder) report(kind string, m model.Meta, path, msg string) {
	o := u.s.Loaded(kind, m.Namespace, m.Name)
	if u.strict {
		u.problems.Errorf(o.File, o.LineOf(path), path, "%s (--strict)", msg)
		return
	}
	u.problems.Warnf(o.File, o.LineOf(path), path, "%s", msg)
}

func (u *unbinder) profilesWithoutTarget() {
	for _, p := range u.profiles {
		if u.matched[load.ID{Kind: api.KindProfile, Namespace: p.Namespace, Name: p.Name}] {
			continue
		}
		msg := fmt.Sprintf("Profile %s/%s matches no Target", p.Namespace, p.Name)
		var first *model.Target
		why, more := "", 0
		for _, t := range u.s.Targets {
			// Labels first: why a grant is missing is a Sprintf and a scan of the grants.
			if !p.sel.Matches(labels.Set(t.Labels)) {
				continue
			}
			if r := notGranted(u.s, p.Namespace, t); r != "" {
				if first == nil {
					first, why = t, r
				} else {
					more++
				}
			}
		}
		switch {
		case first != nil:
			msg += fmt.Sprintf("; Target %s/%s has matching labels but %s%s", first.Namespace, first.Name, why, andMore(more, "Target"))
		case p.sel.Empty():
			msg += ": there is no Target"
		default:
			msg += fmt.Sprintf(": no Target has labels that match %s", p.sel)
		}
		path := "spec.targetSelector"
		if p.Spec.TargetSelector == nil {
			path = "metadata.name"
		}
		u.report(api.KindProfile, p.Meta, path, msg)
	}
}

func (u *unbinder) targetsWithoutRelease() {
	named := u.namedByReleaseBinding()
	for _, t := range u.s.Targets {
		if u.bound[t] || named[t] || u.failsItself(t) || u.matchedByBrokenProfile(t) {
			continue
		}
		msg := fmt.Sprintf("Target %s/%s gets no release: no Profile or ReleaseBinding binds one to it, so its bootstrap chart installs nothing", t.Namespace, t.Name)
		var first *profile
		why, more := "", 0
		for _, p := range u.profiles {
			if !p.sel.Matches(labels.Set(t.Labels)) {
				continue
			}
			if r := notGranted(u.s, p.Namespace, t); r != "" {
				if first == nil {
					first, why = p, r
				} else {
					more++
				}
			}
		}
		if first != nil {
			msg += fmt.Sprintf("; Profile %s/%s matches its labels but %s%s", first.Namespace, first.Name, why, andMore(more, "Profile"))
		}
		u.report(api.KindTarget, t.Meta, "metadata.name", msg)
	}
}

// namedByReleaseBinding are the Targets a ReleaseBinding names, bound or
// not: one that does not bind has a problem of its own that says why.
func (u *unbinder) namedByReleaseBinding() map[*model.Target]bool {
	out := map[*model.Target]bool{}
	for _, b := range u.s.ReleaseBindings {
		id := model.Named{Reference: model.Reference{To: api.KindTarget}, Ref: b.Spec.TargetRef}.ID(b.Namespace)
		if t := model.Get[model.Target](u.s, id.Kind, id.Namespace, id.Name); t != nil {
			out[t] = true
		}
	}
	return out
}

// failsItself: a reference of the Target does not resolve; it is not
// rendered, and that problem comes first.
func (u *unbinder) failsItself(t *model.Target) bool {
	for _, n := range model.ReferencesOf(u.s.Loaded(api.KindTarget, t.Namespace, t.Name)) {
		if u.s.Resolve(t.Namespace, n) != nil {
			return true
		}
	}
	return false
}

// matchedByBrokenProfile: a Profile whose Release is missing (a problem of
// its own) matches the Target's labels.
func (u *unbinder) matchedByBrokenProfile(t *model.Target) bool {
	for _, p := range u.s.Profiles {
		if model.Get[model.Release](u.s, api.KindRelease, p.Namespace, p.Spec.ReleaseRef.Name) != nil {
			continue
		}
		sel, err := model.Selector(p.Spec.TargetSelector)
		if err == nil && sel.Matches(labels.Set(t.Labels)) && u.s.ProfileGranted(p.Namespace, t) {
			return true
		}
	}
	return false
}

// notGranted says which grant a Profile of profileNS lacks to match t, and
// how to add it; "" when it has them.
func notGranted(s *model.Set, profileNS string, t *model.Target) string {
	switch missing := s.ProfileGrantsMissing(profileNS, t); len(missing) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("no ReferenceGrant in %s allows %s from %s (add it to the grant's from: SolAr needs both Profile and ReleaseBinding)",
			t.Namespace, missing[0], profileNS)
	}
	return fmt.Sprintf("no ReferenceGrant in %s allows Profile from %s (add one: from Profile and ReleaseBinding, to Target)", t.Namespace, profileNS)
}

// andMore says how many more there are like the one named.
func andMore(n int, kind string) string {
	switch n {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; and so has 1 more %s", kind)
	}
	return fmt.Sprintf("; and so have %d more %ss", n, kind)
}
