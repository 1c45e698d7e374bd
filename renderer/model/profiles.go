package model

import (
	"slices"

	"github.com/solar-pipeline/solar/api"
)

// ProfileGranted reports whether a Profile of namespace profileNS may match
// Target t. A Profile matches the Targets of its own namespace and, as
// SolAr's Profile and Target controllers do, those of another namespace
// whose ReferenceGrants allow both Profile (discovery) and ReleaseBinding
// (rendering) from the Profile's namespace to Target; without both it fails
// closed.
func (s *Set) ProfileGranted(profileNS string, t *Target) bool {
	return t.Namespace == profileNS || (s.Granted(api.KindProfile, profileNS, api.KindTarget, t.Namespace, t.Name) &&
		s.Granted(api.KindReleaseBinding, profileNS, api.KindTarget, t.Namespace, t.Name))
}

// ProfileGrantsMissing are the kinds (Profile, ReleaseBinding) that no
// ReferenceGrant in t's namespace allows from profileNS to Target t: why a
// Profile of profileNS does not match t; nil when it may.
func (s *Set) ProfileGrantsMissing(profileNS string, t *Target) []string {
	if t.Namespace == profileNS {
		return nil
	}
	var missing []string
	for _, kind := range []string{api.KindProfile, api.KindReleaseBinding} {
		if !s.Granted(kind, profileNS, api.KindTarget, t.Namespace, t.Name) {
			missing = append(missing, kind)
		}
	}
	return missing
}

// targetsByNamespace are the Targets of each namespace, in name order.
func (s *Set) targetsByNamespace() map[string][]*Target {
	out := map[string][]*Target{}
	for _, t := range s.Targets {
		out[t.Namespace] = append(out[t.Namespace], t)
	}
	return out
}

// profileReach maps a namespace to the other namespaces whose
// ReferenceGrants name kind Profile from it and kind Target: the only
// namespaces whose Targets its Profiles may match (ProfileGranted decides
// each Target). Each list is sorted.
func (s *Set) profileReach() map[string][]string {
	out := map[string][]string{}
	for _, g := range s.ReferenceGrants {
		if !slices.ContainsFunc(g.Spec.To, func(t GrantTo) bool { return t.Group == api.Group && t.Kind == api.KindTarget }) {
			continue
		}
		for _, f := range g.Spec.From {
			if f.Group == api.Group && f.Kind == api.KindProfile && f.Namespace != g.Namespace && !slices.Contains(out[f.Namespace], g.Namespace) {
				out[f.Namespace] = append(out[f.Namespace], g.Namespace)
			}
		}
	}
	for _, l := range out {
		slices.Sort(l)
	}
	return out
}
