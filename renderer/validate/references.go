package validate

import (
	"errors"
	"slices"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// references reports every reference between objects that does not resolve;
// a reference to an object that failed its schema (in invalid) says so.
func references(s *model.Set, invalid map[load.ID]*load.Object) diag.List {
	var problems diag.List
	check := func(kind string, m model.Meta, path string, err error) {
		if err == nil {
			return
		}
		o := s.Loaded(kind, m.Namespace, m.Name)
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
	local := func(name string) model.Ref { return model.Ref{Name: name} }

	for _, t := range s.Targets {
		_, err := model.Lookup[model.Registry](s, model.KindTarget, t.Namespace, model.KindRegistry, t.Spec.RenderRegistryRef)
		check(model.KindTarget, t.Meta, "spec.renderRegistryRef", err)
	}
	for _, p := range s.Profiles {
		_, err := model.Lookup[model.Release](s, model.KindProfile, p.Namespace, model.KindRelease, local(p.Spec.ReleaseRef.Name))
		check(model.KindProfile, p.Meta, "spec.releaseRef", err)
	}
	for _, r := range s.Releases {
		if r.Spec.ComponentVersionRef != nil {
			_, err := model.Lookup[model.ComponentVersion](s, model.KindRelease, r.Namespace, model.KindComponentVersion, *r.Spec.ComponentVersionRef)
			check(model.KindRelease, r.Meta, "spec.componentVersionRef", err)
		}
	}
	for _, cv := range s.ComponentVersions {
		_, err := model.Lookup[model.Component](s, model.KindComponentVersion, cv.Namespace, model.KindComponent, local(cv.Spec.ComponentRef.Name))
		check(model.KindComponentVersion, cv.Meta, "spec.componentRef", err)
		o := s.Loaded(model.KindComponentVersion, cv.Namespace, cv.Name)
		name := cv.Spec.Entrypoint.ResourceName
		if _, ok := cv.Spec.Resources[name]; !ok {
			problems.Errorf(o.File, o.LineOf("spec.entrypoint.resourceName"), "spec.entrypoint.resourceName", "no resource %q in spec.resources", name)
		}
	}
	for _, b := range s.ReleaseBindings {
		_, err := model.Lookup[model.Target](s, model.KindReleaseBinding, b.Namespace, model.KindTarget, b.Spec.TargetRef)
		check(model.KindReleaseBinding, b.Meta, "spec.targetRef", err)
		_, err = model.Lookup[model.Release](s, model.KindReleaseBinding, b.Namespace, model.KindRelease, local(b.Spec.ReleaseRef.Name))
		check(model.KindReleaseBinding, b.Meta, "spec.releaseRef", err)
	}
	for _, b := range s.RegistryBindings {
		_, err := model.Lookup[model.Target](s, model.KindRegistryBinding, b.Namespace, model.KindTarget, b.Spec.TargetRef)
		check(model.KindRegistryBinding, b.Meta, "spec.targetRef", err)
		_, err = model.Lookup[model.Registry](s, model.KindRegistryBinding, b.Namespace, model.KindRegistry, b.Spec.RegistryRef)
		check(model.KindRegistryBinding, b.Meta, "spec.registryRef", err)
	}
	for _, g := range s.ReferenceGrants {
		o := s.Loaded(model.KindReferenceGrant, g.Namespace, g.Name)
		for i, f := range g.Spec.From {
			if f.Group != model.Group || !slices.Contains(model.Kinds, f.Kind) {
				path := load.Index("spec.from", i) + ".kind"
				problems.Warnf(o.File, o.LineOf(path), path, "solar does not process %s of group %q: this entry grants nothing here", f.Kind, f.Group)
			}
		}
	}
	for _, c := range s.PipelineConfigs[min(1, len(s.PipelineConfigs)):] {
		first := s.Loaded(model.KindPipelineConfig, s.PipelineConfigs[0].Namespace, s.PipelineConfigs[0].Name)
		o := s.Loaded(model.KindPipelineConfig, c.Namespace, c.Name)
		problems.Errorf(o.File, o.Line, "", "more than one PipelineConfig; the first is at %s", first.Pos())
	}
	return problems
}
