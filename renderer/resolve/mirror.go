package resolve

import (
	"cmp"
	"fmt"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/mirror"
	"github.com/solar-pipeline/solar/renderer/model"
)

// mirrorField is where the PipelineConfig names its mirror.
const mirrorField = "spec.registries.mirror"

// Mirror is a site's registry that holds the application charts (and
// images) of every other registry: the PipelineConfig's
// spec.registries.mirror.
type Mirror struct {
	// Registry is the Registry its registryRef names: its hostname, its
	// plainHTTP and its targetPullSecretName apply to every mirrored chart.
	Registry *model.Registry
	// Base is HOSTNAME/PATH, the base package mirror relocates under.
	Base string
}

// Origin is where a mirrored chart was relocated from: what the connected
// side reads (solar artifacts, solar export).
type Origin struct {
	// Repository is HOST[:PORT]/PATH, without a scheme.
	Repository string
	Insecure   bool
}

// mirrorOf is the set's mirror, nil without one. An error (its Registry
// cannot be had, or a chart cannot be relocated) names the PipelineConfig.
func mirrorOf(s *model.Set) (*Mirror, *load.Object, error) {
	if len(s.PipelineConfigs) == 0 || s.PipelineConfigs[0].Spec.Registries.Mirror == nil {
		return nil, nil, nil
	}
	c := s.PipelineConfigs[0]
	m := c.Spec.Registries.Mirror
	o := s.Loaded(api.KindPipelineConfig, c.Namespace, c.Name)
	reg, err := model.Lookup[model.Registry](s, api.KindPipelineConfig, c.Namespace, api.KindRegistry, m.RegistryRef)
	if err != nil {
		return nil, o, fmt.Errorf("mirror registry: %w", err)
	}
	return &Mirror{Registry: reg, Base: reg.Spec.Hostname + "/" + cmp.Or(m.Path, model.DefaultMirrorPath)}, o, nil
}

// relocate points the chart at its copy in the mirror: the mirror's
// repository (package mirror's rule, the one solar push follows), its
// plainHTTP; the tag and digest stay. Origin keeps where it came from.
func (m *Mirror) relocate(c *Chart) error {
	repo, err := mirror.Repository(m.Base, c.Repository)
	if err != nil {
		return err
	}
	c.Origin = &Origin{Repository: c.Repository, Insecure: c.Insecure}
	c.Repository, c.Insecure = repo, m.Registry.Spec.PlainHTTP
	return nil
}

// mirrorProblem reports on the Target that the PipelineConfig's mirror
// failed it.
func mirrorProblem(out *Resolution, o *load.Object, err error) {
	path := mirrorField + ".registryRef"
	out.Problems.Errorf(o.File, o.LineOf(path), path, "Target %s/%s: %v", out.Namespace, out.Name, err)
}

// siteMirror is the set's mirror as Resolve found it once for every Target:
// the mirror (nil: none), the PipelineConfig that names it, and why it
// could not be had.
type siteMirror struct {
	mirror *Mirror
	config *load.Object
	err    error
}

// relocate points every release the Target gets at the mirror's copy of
// its chart, when there is a mirror.
func relocate(s *model.Set, out *Resolution) {
	if out.Mirror == nil {
		return
	}
	for _, r := range out.Releases {
		if err := out.Mirror.relocate(&r.Chart); err != nil {
			o := s.Loaded(api.KindRelease, r.Release.Namespace, r.Release.Name)
			out.Problems.Errorf(o.File, o.Line, "", "Release %s for Target %s/%s: %v", Name(r.Release), out.Namespace, out.Name, err)
		}
	}
}
