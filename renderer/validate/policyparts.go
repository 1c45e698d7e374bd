package validate

import (
	"maps"
	"slices"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// policyPart bounds how many objects one evaluation of the embedded policies
// sees. CUE holds about 28 KB per object while it evaluates them: the 7,000
// objects of 100,000 Targets' input were 200 MB of the 624 MB live heap at a
// vet's peak, all at once.
var policyPart = 500

// part is a part of the embedded policies' input: whole namespaces.
type part struct {
	objects  []*load.Object
	bindings []model.Binding
}

// embeddedParts splits the embedded policies' input into parts of whole
// namespaces, each evaluated alone; together they find what the whole input
// finds, since every finding of the embedded policies is about one object,
// the PipelineConfig (in every part's input) or the agent Targets of one
// namespace (the bindings of a namespace's Targets, and the Release of each,
// are in the same part). A finding made in two parts (the PipelineConfig's,
// or one of a Release put in another namespace's part for its binding) is one
// problem: diag.List.Sorted drops repeats. A policy of the user's sees the
// whole input (Options.PolicyDirs).
func embeddedParts(s *model.Set, valid []*load.Object, bindings []model.Binding) []part {
	objects := map[string][]*load.Object{}
	for _, o := range valid {
		if slices.Contains(embeddedKinds, o.Kind) {
			objects[o.Namespace] = append(objects[o.Namespace], o)
		}
	}
	byTarget := map[string][]model.Binding{}
	for _, b := range bindings {
		byTarget[b.Target.Namespace] = append(byTarget[b.Target.Namespace], b)
	}
	namespaces := slices.Sorted(maps.Keys(objects))
	for ns := range byTarget {
		if objects[ns] == nil {
			namespaces = append(namespaces, ns)
		}
	}
	slices.Sort(namespaces)
	parts := []part{{}}
	for _, ns := range namespaces {
		p := &parts[len(parts)-1]
		if len(p.objects) >= policyPart {
			parts = append(parts, part{})
			p = &parts[len(parts)-1]
		}
		p.objects = append(p.objects, objects[ns]...)
		p.bindings = append(p.bindings, byTarget[ns]...)
	}
	for i := range parts {
		parts[i].objects = withBoundReleases(s, parts[i])
	}
	return parts
}

// withBoundReleases adds to a part's objects the Release of each of its
// bindings that another namespace holds.
func withBoundReleases(s *model.Set, p part) []*load.Object {
	in := map[load.ID]bool{}
	for _, o := range p.objects {
		in[o.ID()] = true
	}
	for _, b := range p.bindings {
		o := s.Loaded(api.KindRelease, b.Release.Namespace, b.Release.Name)
		if o != nil && !in[o.ID()] {
			in[o.ID()] = true
			p.objects = append(p.objects, o)
		}
	}
	return p.objects
}
