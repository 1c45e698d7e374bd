package validate

import (
	"errors"
	"slices"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// references reports every reference between objects that does not resolve;
// a reference to an object that failed its schema (in invalid) says so.
func references(s *model.Set, invalid map[load.ID]*load.Object) diag.List {
	var problems diag.List
	check := func(o *load.Object, path string, err error) {
		if err == nil {
			return
		}
		msg := "refers to a missing "
		var nf *model.NotFoundError
		switch {
		case errors.Is(err, model.ErrNotGranted):
			msg = "refers across namespaces without a grant: "
		case errors.As(err, &nf):
			if bad := invalid[nf.ID]; bad != nil {
				problems.Errorf(o.File, o.LineOf(path), path, "refers to %s %s/%s, which is invalid: see %s", nf.ID.Kind, nf.ID.Namespace, nf.ID.Name, bad.Pos())
				return
			}
		}
		problems.Errorf(o.File, o.LineOf(path), path, "%s%v", msg, err)
	}
	// Every reference of the one table (model.References).
	for _, o := range s.Objects() {
		for _, n := range model.ReferencesOf(o) {
			check(o, n.Field, s.Resolve(o.Namespace, n))
		}
	}
	for _, cv := range s.ComponentVersions {
		o := s.Loaded(api.KindComponentVersion, cv.Namespace, cv.Name)
		name := cv.Spec.Entrypoint.ResourceName
		if _, ok := cv.Spec.Resources[name]; !ok {
			problems.Errorf(o.File, o.LineOf("spec.entrypoint.resourceName"), "spec.entrypoint.resourceName", "no resource %q in spec.resources", name)
		}
	}
	for _, g := range s.ReferenceGrants {
		o := s.Loaded(api.KindReferenceGrant, g.Namespace, g.Name)
		for i, f := range g.Spec.From {
			if f.Group != api.Group || !slices.Contains(api.Kinds, f.Kind) {
				path := load.Index("spec.from", i) + ".kind"
				problems.Warnf(o.File, o.LineOf(path), path, "solar does not process %s of group %q: this entry grants nothing here", f.Kind, f.Group)
			}
		}
	}
	for _, c := range s.PipelineConfigs[min(1, len(s.PipelineConfigs)):] {
		first := s.Loaded(api.KindPipelineConfig, s.PipelineConfigs[0].Namespace, s.PipelineConfigs[0].Name)
		o := s.Loaded(api.KindPipelineConfig, c.Namespace, c.Name)
		problems.Errorf(o.File, o.Line, "", "more than one PipelineConfig; the first is at %s", first.Pos())
	}
	return problems
}
