package chart

import (
	"encoding/json"

	"github.com/opencontainers/go-digest"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// Job is a chart to publish: its repository and how to build its source. The
// source is built when it is needed and not kept: a run of 10,000 Targets
// would otherwise hold every bootstrap chart's values at once.
type Job struct {
	Repository string
	Source     func() *Source
}

// ReleaseJob is the release chart of a selected release, which the Targets
// of its namespace share.
func ReleaseJob(t *resolve.Resolution, sel *resolve.Selected, opts AppOptions) Job {
	r := sel.Release
	return Job{chain.ReleaseRepository(t.Namespace, r.Namespace, r.Name), func() *Source { return Release(sel, opts) }}
}

// AgentJob is a Target's own agent chart: an agent Release of a Target
// whose credential was issued, with its kubeconfig.
func AgentJob(t *resolve.Resolution, sel *resolve.Selected, opts AppOptions, kubeconfig []byte) Job {
	r := sel.Release
	return Job{chain.AgentRepository(t.Namespace, t.Name, r.Namespace, r.Name), func() *Source { return Agent(sel, opts, t.Name, kubeconfig) }}
}

// BootstrapJob is the bootstrap chart of a Target, naming the release charts
// of its releases at refs (in the order of t.Releases).
func BootstrapJob(t *resolve.Resolution, refs []Ref) Job {
	return Job{chain.BootstrapRepository(t.Namespace, t.Name), func() *Source { return Bootstrap(t, refs) }}
}

// Publish is the job for renderer/publish: the chart packaged at each
// version it asks for.
func (j Job) Publish(opts Options) publish.Job {
	return publish.Job{Repository: j.Repository, Key: func() string { return j.Source().key() }, Pack: func(version string) (*publish.Artifact, error) {
		return j.Source().Artifact(version, opts)
	}}
}

// key identifies what the chart packs to at any version: the digest of its
// source as JSON, which decides its Chart.yaml and values.yaml (the templates
// are the executable's own, which the pack cache's key holds). "" when the
// source has no JSON form.
func (s *Source) key() string {
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	return digest.FromBytes(b).String()
}

// Artifact is the chart at version as an OCI artifact with Helm's media
// types: the chart's metadata as config, the .tgz as the one layer, and only
// content-derived manifest annotations with the fixed creation time.
func (s *Source) Artifact(version string, opts Options) (*publish.Artifact, error) {
	pkg, err := s.Package(version, opts)
	if err != nil {
		return nil, err
	}
	return pkg.artifact(opts), nil
}

// artifact is the OCI artifact of the packaged chart.
func (p *Packaged) artifact(opts Options) *publish.Artifact {
	return &publish.Artifact{
		Config: publish.Blob{Desc: p.ConfigDesc, Data: p.Config},
		Layers: []publish.Blob{{Desc: p.Layer, Data: p.Archive}},
		Annotations: map[string]string{
			ocispec.AnnotationCreated: publish.Created(opts.Created),
			ocispec.AnnotationTitle:   p.Name,
			ocispec.AnnotationVersion: p.Version,
		},
	}
}
