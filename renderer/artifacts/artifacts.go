// Package artifacts lists the OCI artifacts a Target's chain needs: Solar's
// own charts (the Target's bootstrap chart, the release charts its
// HelmReleases install), the application charts those install, and the
// container images the rendered application charts name. It is what an
// air-gapped site has to receive before Flux can install anything there.
//
// A Collector is told, per Target, each chart (Chart) and the objects a
// chart renders (Objects, as objdiff's Walker renders them with Helm's
// engine); List is every artifact once, with the Targets that need it:
//
//	var c artifacts.Collector
//	c.Chart("alpha/edge-1", artifacts.KindBootstrap, "registry.example.com/solar/alpha/bootstrap-edge-1:0.0.1", "sha256:...")
//	c.Objects("alpha/edge-1", "ghcr.io/stefanprodan/charts/podinfo:6.7.0", objs)
//	list := c.List()
//
// With a Mirror (the PipelineConfig's spec.registries.mirror), each
// application chart and image is also given its Site reference: where solar
// push relocates it in the site's registry (package mirror), and where the
// site's Flux (charts) and container runtime (images, through its registry
// mirror configuration) pull it. Its Reference stays the source's: what the
// connected side reads and solar export carries.
//
// The package is pure: what is read from registries is read by its caller.
package artifacts

import (
	"cmp"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/mirror"
)

// The kinds of artifact, in the order List gives them.
const (
	// KindBootstrap is a Target's bootstrap chart (level 1 of the chain).
	KindBootstrap = "bootstrap-chart"
	// KindRelease is a release chart (level 2).
	KindRelease = "release-chart"
	// KindChart is an application chart (level 3).
	KindChart = "chart"
	// KindImage is a container image an application chart's objects name.
	KindImage = "image"
)

var kindOrder = map[string]int{KindBootstrap: 0, KindRelease: 1, KindChart: 2, KindImage: 3}

// Artifact is one OCI artifact and the Targets whose chain needs it.
type Artifact struct {
	Kind string `json:"kind"`
	// Reference is where the artifact is: a chart's
	// HOST[:PORT]/REPOSITORY[:TAG] (a chart of Solar not yet published:
	// its repository alone), an image's reference as the chart writes it.
	Reference string `json:"reference"`
	// Site, with a mirror, is where an application chart or image is in
	// the site's registry: mirror.Reference of Reference. Empty without a
	// mirror, and for Solar's charts (already in the render registry).
	Site string `json:"site,omitempty"`
	// Digest is the manifest digest, where known: a chart of Solar the
	// store holds, an application chart read from its registry, an image
	// whose reference carries one. Empty otherwise.
	Digest string `json:"digest,omitempty"`
	// Charts, of an image, are the charts that name it.
	Charts []string `json:"charts,omitempty"`
	// Targets are the Targets that need it ("<namespace>/<name>"), sorted.
	Targets []string `json:"targets"`
}

// List is every artifact the chains of a run need, each once.
type List struct {
	Artifacts []Artifact `json:"artifacts"`
	// Notes say what of the chains was not rendered or read, and why: the
	// images of a chart not rendered are missing from Artifacts.
	Notes []string `json:"notes,omitempty"`
	// Problems are the input's problems (as render reports them) and the
	// image references that do not parse, each naming its chart.
	Problems diag.List `json:"problems"`
}

// Collector gathers the artifacts of many Targets. Its zero value is ready
// to use; it is not safe for concurrent use.
type Collector struct {
	// Mirror, when set, is the site registry's HOSTNAME/PATH the
	// application charts and images are relocated under (Artifact.Site).
	Mirror    string
	artifacts []Artifact
	index     map[string]int
	problems  diag.List
	// said are the problems in problems, to say each once: a chart many
	// Targets install has the same problem for each.
	said  map[diag.Problem]bool
	notes []string
}

// Chart notes that target's chain needs a chart of kind (KindBootstrap,
// KindRelease, KindChart) at reference, of digest ("" when not known).
func (c *Collector) Chart(target, kind, reference, digest string) {
	c.add(Artifact{Kind: kind, Reference: reference, Digest: digest}, target, "")
}

// Note adds a note (once).
func (c *Collector) Note(note string) {
	if !slices.Contains(c.notes, note) {
		c.notes = append(c.notes, note)
	}
}

// Problems adds problems to the List's.
func (c *Collector) Problems(problems diag.List) {
	c.problems = append(c.problems, problems...)
	for _, p := range problems {
		c.say(p)
	}
}

// say marks p said; false if it was already.
func (c *Collector) say(p diag.Problem) bool {
	if c.said == nil {
		c.said = map[diag.Problem]bool{}
	}
	if c.said[p] {
		return false
	}
	c.said[p] = true
	return true
}

// add merges a into the artifacts: one per kind and reference, a digest
// learned later filled in, target and chart ("" for none) added (List
// keeps each once).
func (c *Collector) add(a Artifact, target, chart string) {
	if c.index == nil {
		c.index = map[string]int{}
	}
	key := a.Kind + "\x00" + a.Reference
	i, ok := c.index[key]
	if !ok {
		i = len(c.artifacts)
		c.index[key] = i
		a.Site = c.site(a)
		c.artifacts = append(c.artifacts, a)
	}
	p := &c.artifacts[i]
	p.Digest = cmp.Or(p.Digest, a.Digest)
	// Each once: List sorts them and drops repeats; a repeat of the last
	// (a Target's charts come together) is not kept meanwhile. Not a search
	// of the list: an image every Target needs has 100,000 of them.
	if n := len(p.Targets); n == 0 || p.Targets[n-1] != target {
		p.Targets = append(p.Targets, target)
	}
	if n := len(p.Charts); chart != "" && (n == 0 || p.Charts[n-1] != chart) {
		p.Charts = append(p.Charts, chart)
	}
}

// site is where a is in the mirror, "" without one or for Solar's charts.
// A reference that does not relocate has none (an image's was reported as
// a problem when it did not parse).
func (c *Collector) site(a Artifact) string {
	if c.Mirror == "" || (a.Kind != KindChart && a.Kind != KindImage) {
		return ""
	}
	ref, err := mirror.Reference(c.Mirror, a.Reference)
	if err != nil {
		return ""
	}
	return ref
}

// List is what was collected: the artifacts ordered by kind (bootstrap
// charts, release charts, application charts, images) and reference, each
// one's Targets and charts sorted; the problems sorted.
func (c *Collector) List() *List {
	out := make([]Artifact, len(c.artifacts))
	for i, a := range c.artifacts {
		a.Targets = slices.Compact(slices.Sorted(slices.Values(a.Targets)))
		if a.Charts != nil {
			a.Charts = slices.Compact(slices.Sorted(slices.Values(a.Charts)))
		}
		out[i] = a
	}
	slices.SortFunc(out, func(a, b Artifact) int {
		return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), strings.Compare(a.Reference, b.Reference))
	})
	problems := c.problems.Sorted()
	if problems == nil {
		problems = diag.List{}
	}
	return &List{Artifacts: out, Notes: slices.Clone(c.notes), Problems: problems}
}

// Count is how many artifacts of kind the list holds.
func (l *List) Count(kind string) int {
	n := 0
	for _, a := range l.Artifacts {
		if a.Kind == kind {
			n++
		}
	}
	return n
}
