package resolve

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// Options changes how strictly Targets resolve.
type Options struct {
	// RegistryPrefix is the path under which the repositories will be, when
	// known (publish --registry HOST/PREFIX): names are bounded with it.
	RegistryPrefix string
	// StrictRegistryBindings makes a registry a Target pulls from without a
	// RegistryBinding an error; otherwise such pulls are anonymous.
	StrictRegistryBindings bool
}

// Plan is what every Target gets, in namespace and name order.
type Plan struct {
	Targets []*Resolution
}

// Resolution is what one Target resolved to (the Target itself embedded).
// When Problems has errors the Target must not be rendered; Releases and
// Excluded are then incomplete.
type Resolution struct {
	*model.Target
	// RenderRegistry is where the Target's charts are published.
	RenderRegistry *model.Registry
	// Releases are the selected releases in winner order (priority descending,
	// then <namespace>/<name>).
	Releases []*Selected
	// Excluded are the releases bound to the Target that it does not get.
	Excluded []Excluded
	// PullSecrets maps a registry hostname to the name of the Secret the Target
	// pulls from it with.
	PullSecrets map[string]string
	// Mirror, when the PipelineConfig sets one, is the site registry the
	// Target pulls every application chart from (each Chart's Origin says
	// from where it was relocated); nil: from their own registries.
	Mirror   *Mirror
	Problems diag.List
}

// Selected is one release a Target gets.
type Selected struct {
	// UniqueName is the release's spec.uniqueName, else its Component's
	// name (an inline chart: its own name): a Target gets one release of
	// each (the winner by priority).
	UniqueName string
	Release    *model.Release
	// Via is the first Profile or ReleaseBinding that bound the release.
	Via   load.ID
	Chart Chart
	// PullSecret is the Secret for Source's registry; empty pulls anonymously.
	PullSecret string
	// RenderedValues is Source.ValuesTemplate rendered for the Target.
	RenderedValues string
	// Names are the names of the release's objects on the Target's cluster.
	Names chain.Release
	// DependsOn are the releases of the Target this one is installed after
	// (its Release's and ComponentVersion's dependencies), in uniqueName
	// order: its application HelmRelease's spec.dependsOn.
	DependsOn []*Selected
}

// Chart is the chart a release deploys.
type Chart struct {
	// Repository is HOST[:PORT]/PATH, without a scheme: where the Target
	// pulls the chart from (with a mirror, the mirror's copy).
	Repository string
	Tag        string
	Digest     string
	Insecure   bool
	// ValuesTemplate is the ComponentVersion's helm.valuesTemplate, if any.
	ValuesTemplate string
	// AppVersion is the ComponentVersion's helm.appVersion, if any.
	AppVersion string
	// ComponentVersion is nil for an inline chart.
	ComponentVersion *model.ComponentVersion
	// Origin, with a mirror, is the repository the chart was relocated
	// from (the ComponentVersion's or inline chart's); nil without one.
	Origin *Origin
}

// Hostname is the registry part of the repository.
func (s Chart) Hostname() string {
	host, _, _ := strings.Cut(s.Repository, "/")
	return host
}

// Excluded is a release bound to a Target that the Target does not get.
type Excluded struct {
	Release *model.Release
	// UniqueName is the release's, as for a Selected one.
	UniqueName string
	Reason     string
}

// Name is the release's <namespace>/<name>.
func Name(r *model.Release) string { return r.Namespace + "/" + r.Name }

func resolveTarget(s *model.Set, t *model.Target, bindings []model.Binding, regBindings []*model.RegistryBinding, site siteMirror, opts Options) *Resolution {
	out := &Resolution{Target: t, PullSecrets: map[string]string{}, Mirror: site.mirror}
	src := s.Loaded(api.KindTarget, t.Namespace, t.Name)
	targetErr := func(path, format string, args ...any) {
		out.Problems.Errorf(src.File, src.LineOf(path), path, "Target %s/%s: "+format, append([]any{t.Namespace, t.Name}, args...)...)
	}

	reg, err := model.Lookup[model.Registry](s, api.KindTarget, t.Namespace, api.KindRegistry, t.Spec.RenderRegistryRef)
	if err != nil {
		targetErr("spec.renderRegistryRef", "render registry: %v", err)
	} else {
		out.RenderRegistry = reg
	}
	if site.err != nil {
		mirrorProblem(out, site.config, site.err)
	}
	pullSecrets(s, out, reg, site, regBindings)

	choose(s, out, candidates(s, out, bindings))
	relocate(s, out)
	for _, r := range out.Releases {
		host := r.Chart.Hostname()
		secret, ok := out.PullSecrets[host]
		if !ok && opts.StrictRegistryBindings {
			via := ""
			if r.Chart.Origin != nil {
				via = "the mirror "
			}
			targetErr("metadata.name", "release %s pulls from %s%s, which no RegistryBinding of the Target covers (--strict-registry-bindings)", Name(r.Release), via, host)
		}
		r.PullSecret = secret
		if r.Chart.ValuesTemplate != "" {
			r.RenderedValues, err = valuesTemplate(t, r)
			if err != nil {
				cv := r.Chart.ComponentVersion
				o := s.Loaded(api.KindComponentVersion, cv.Namespace, cv.Name)
				path := load.Key("spec.resources", cv.Spec.Entrypoint.ResourceName) + ".helm.valuesTemplate"
				out.Problems.Errorf(o.File, o.LineOf(path), path, "%v", err)
			}
		}
	}
	names := make([]chain.Release, len(out.Releases))
	for i, r := range out.Releases {
		r.Names = chain.For(t.Name, r.UniqueName, r.Release.Spec.TargetNamespace)
		names[i] = r.Names
	}
	checkLengths(s, out, opts.RegistryPrefix)
	dependencies(s, out)
	// Only contrived names meet (a Target named like a level's prefix);
	// Flux would then fail on the cluster, so the Target fails here.
	for _, c := range chain.Collisions(chain.Objects("<flux namespace>", names)) {
		targetErr("metadata.name", "two objects on its cluster would have one name: %s; rename the Target or a release's uniqueName", c)
	}
	if reg != nil {
		if _, ok := out.PullSecrets[reg.Spec.Hostname]; !ok && opts.StrictRegistryBindings {
			targetErr("spec.renderRegistryRef", "its render registry %s has no targetPullSecretName and no RegistryBinding (--strict-registry-bindings)", reg.Spec.Hostname)
		}
	}
	return out
}

// candidates are the releases bound to the Target, each once with the first
// binding that made it, by priority (highest first), then name. A release
// whose entrypoint solar does not support is excluded with a warning.
func candidates(s *model.Set, out *Resolution, bindings []model.Binding) []*Selected {
	t := out.Target
	var cands []*Selected
	seen := map[*model.Release]bool{}
	for _, b := range bindings {
		if seen[b.Release] {
			continue
		}
		seen[b.Release] = true
		sel, err := selected(s, b)
		if cv, ok := errors.AsType[*unsupportedError](err); ok {
			o := s.Loaded(api.KindComponentVersion, cv.cv.Namespace, cv.cv.Name)
			out.Problems.Warnf(o.File, o.LineOf("spec.entrypoint.type"), "spec.entrypoint.type",
				"Release %s for Target %s/%s: %v", Name(b.Release), t.Namespace, t.Name, err)
			out.Excluded = append(out.Excluded, Excluded{Release: b.Release, UniqueName: cmp.Or(b.Release.Spec.UniqueName, cv.cv.Spec.ComponentRef.Name), Reason: err.Error()})
			continue
		}
		if err != nil {
			o := s.Loaded(api.KindRelease, b.Release.Namespace, b.Release.Name)
			out.Problems.Errorf(o.File, o.LineOf("spec.componentVersionRef"), "spec.componentVersionRef",
				"Release %s for Target %s/%s: %v", Name(b.Release), t.Namespace, t.Name, err)
			continue
		}
		cands = append(cands, sel)
	}
	slices.SortFunc(cands, func(a, b *Selected) int {
		return cmp.Or(cmp.Compare(b.Release.Spec.Priority, a.Release.Spec.Priority), cmp.Compare(Name(a.Release), Name(b.Release)))
	})

	return cands
}

// choose selects the candidates the Target gets: the highest priority of
// each uniqueName, then anti-affinity in that order against those taken.
func choose(s *model.Set, out *Resolution, cands []*Selected) {
	// uniqueName first: the highest priority of each key wins.
	winners := map[string]*Selected{}
	var taken []*Selected
	for _, c := range cands {
		if w, ok := winners[c.UniqueName]; ok {
			out.Excluded = append(out.Excluded, Excluded{Release: c.Release, UniqueName: c.UniqueName, Reason: fmt.Sprintf(
				"uniqueName %q is taken by %s (priority %d, this release has %d)",
				c.UniqueName, Name(w.Release), w.Release.Spec.Priority, c.Release.Spec.Priority)})
			continue
		}
		winners[c.UniqueName] = c
		taken = append(taken, c)
	}
	// Then anti-affinity, in winner order, against the releases already taken.
	for _, c := range taken {
		other, err := conflict(c, out.Releases)
		if err != nil {
			o := s.Loaded(api.KindRelease, c.Release.Namespace, c.Release.Name)
			out.Problems.Errorf(o.File, o.LineOf("spec.antiAffinity"), "spec.antiAffinity", "Release %s: %v", Name(c.Release), err)
			continue
		}
		if other != nil {
			out.Excluded = append(out.Excluded, Excluded{Release: c.Release, UniqueName: c.UniqueName, Reason: fmt.Sprintf(
				"antiAffinity matches the labels of %s, taken before it", Name(other.Release))})
			continue
		}
		out.Releases = append(out.Releases, c)
	}

}

// pullSecrets maps registry hostnames to pull secret names: the render
// registry's own, then the Target's RegistryBindings. Two names for one
// hostname is an error: the Target could only use one of them.
func pullSecrets(s *model.Set, out *Resolution, render *model.Registry, site siteMirror, bindings []*model.RegistryBinding) {
	t := out.Target
	from := map[string]string{}
	add := func(host, secret, where string, o *load.Object, path string) {
		if secret == "" {
			return
		}
		if prev, ok := out.PullSecrets[host]; ok && prev != secret {
			out.Problems.Errorf(o.File, o.LineOf(path), path,
				"Target %s/%s gets two pull secrets for %s: %q from %s and %q from %s",
				t.Namespace, t.Name, host, prev, from[host], secret, where)
			return
		}
		out.PullSecrets[host] = secret
		from[host] = where
	}
	if render != nil {
		o := s.Loaded(api.KindTarget, t.Namespace, t.Name)
		add(render.Spec.Hostname, render.Spec.TargetPullSecretName, "its render registry "+render.Namespace+"/"+render.Name, o, "spec.renderRegistryRef")
	}
	// Every Target pulls the application charts from the mirror, as it
	// pulls Solar's from its render registry.
	if m := site.mirror; m != nil {
		add(m.Registry.Spec.Hostname, m.Registry.Spec.TargetPullSecretName, "the PipelineConfig's mirror "+m.Registry.Namespace+"/"+m.Registry.Name,
			site.config, mirrorField+".registryRef")
	}
	for _, b := range bindings {
		reg, err := model.Lookup[model.Registry](s, api.KindRegistryBinding, b.Namespace, api.KindRegistry, b.Spec.RegistryRef)
		o := s.Loaded(api.KindRegistryBinding, b.Namespace, b.Name)
		if err != nil {
			out.Problems.Errorf(o.File, o.LineOf("spec.registryRef"), "spec.registryRef", "RegistryBinding %s/%s: %v", b.Namespace, b.Name, err)
			continue
		}
		add(reg.Spec.Hostname, reg.Spec.TargetPullSecretName, "RegistryBinding "+b.Namespace+"/"+b.Name, o, "spec.registryRef")
	}
}

// selected resolves a bound release's chart source and uniqueName.
func selected(s *model.Set, b model.Binding) (*Selected, error) {
	r := b.Release
	sel := &Selected{Release: r, Via: *b.Via, UniqueName: cmp.Or(r.Spec.UniqueName, r.Name)}
	if c := r.Spec.Chart; c != nil {
		sel.Chart = Chart{Repository: c.Repository, Tag: c.Tag, Digest: c.Digest, Insecure: plainHTTP(s, c.Repository)}
		return sel, nil
	}
	if r.Spec.ComponentVersionRef == nil {
		return nil, errors.New("neither componentVersionRef nor chart is set")
	}
	cv, err := model.Lookup[model.ComponentVersion](s, api.KindRelease, r.Namespace, api.KindComponentVersion, *r.Spec.ComponentVersionRef)
	if err != nil {
		return nil, err
	}
	res, ok := cv.Spec.Resources[cv.Spec.Entrypoint.ResourceName]
	if !ok {
		return nil, fmt.Errorf("ComponentVersion %s/%s has no resource %q", cv.Namespace, cv.Name, cv.Spec.Entrypoint.ResourceName)
	}
	if cv.Spec.Entrypoint.Type != "helm" {
		return nil, &unsupportedError{cv: cv}
	}
	sel.UniqueName = cmp.Or(r.Spec.UniqueName, cv.Spec.ComponentRef.Name)
	// Without helm, the chart is the resource's repository at its tag, as
	// SolAr renders it.
	sel.Chart = Chart{Repository: res.Repository, Tag: res.Tag, ComponentVersion: cv,
		Insecure: res.Insecure || plainHTTP(s, res.Repository)}
	if res.Helm != nil {
		sel.Chart.ValuesTemplate = res.Helm.ValuesTemplate
		sel.Chart.AppVersion = res.Helm.AppVersion
	}
	return sel, nil
}

// unsupportedError: the ComponentVersion's entrypoint is of a type solar does
// not render (kro).
type unsupportedError struct{ cv *model.ComponentVersion }

func (e *unsupportedError) Error() string {
	return fmt.Sprintf("entrypoint type %q of ComponentVersion %s/%s is not supported by solar yet", e.cv.Spec.Entrypoint.Type, e.cv.Namespace, e.cv.Name)
}

// checkLengths reports the Target and releases whose repositories or chart
// names would be too long for the registry or for helm.
func checkLengths(s *model.Set, t *Resolution, prefix string) {
	if err := chain.CheckRepository(prefix, chain.BootstrapRepository(t.Namespace, t.Name)); err != nil {
		o := s.Loaded(api.KindTarget, t.Namespace, t.Name)
		t.Problems.Errorf(o.File, o.LineOf("metadata.name"), "metadata.name", "Target %s/%s: %v", t.Namespace, t.Name, err)
	}
	for _, sel := range t.Releases {
		r := sel.Release
		repo := chain.ReleaseRepository(t.Namespace, r.Namespace, r.Name)
		if r.Annotations[api.AnnotationTargetCredential] == "true" {
			repo = chain.AgentRepository(t.Namespace, t.Name, r.Namespace, r.Name)
		}
		if err := chain.CheckRepository(prefix, repo); err != nil {
			o := s.Loaded(api.KindRelease, r.Namespace, r.Name)
			t.Problems.Errorf(o.File, o.LineOf("metadata.name"), "metadata.name", "Release %s for Target %s/%s: %v", Name(r), t.Namespace, t.Name, err)
		}
	}
}

// plainHTTP: a Registry of the set serves the repository's host over plain
// HTTP.
func plainHTTP(s *model.Set, repository string) bool {
	host, _, _ := strings.Cut(repository, "/")
	return s.PlainHTTP(host)
}

// conflict returns the first taken release c's antiAffinity matches, or nil. A
// missing antiAffinity matches nothing; an empty one matches everything.
func conflict(c *Selected, taken []*Selected) (*Selected, error) {
	if c.Release.Spec.AntiAffinity == nil {
		return nil, nil
	}
	sel, err := model.Selector(c.Release.Spec.AntiAffinity)
	if err != nil {
		return nil, err
	}
	for _, t := range taken {
		if sel.Matches(labels.Set(t.Release.Labels)) {
			return t, nil
		}
	}
	return nil, nil
}
