package artifacts

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/objdiff"
)

// podSpecs is where each kind of workload holds its Pod's spec.
var podSpecs = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// containerLists are the lists of a Pod's spec that name images.
var containerLists = []string{"initContainers", "containers", "ephemeralContainers"}

// Image is one image a workload names, where it names it.
type Image struct {
	// Reference is the image as written; Digest, its digest when it has
	// one (REPOSITORY@sha256:... or REPOSITORY:TAG@sha256:...).
	Reference, Digest string
	// Object is the workload ("Kind namespace/name") and Path the field
	// (spec.template.spec.containers[0].image).
	Object, Path string
}

// Objects notes that target's chain needs every image the objects chart
// renders name (see Images); an image reference that does not parse is a
// problem naming the chart, the object and the field.
func (c *Collector) Objects(target, chart string, objs []objdiff.Object) {
	images, problems := Images(chart, objs)
	for _, im := range images {
		c.add(Artifact{Kind: KindImage, Reference: im.Reference, Digest: im.Digest}, target, chart)
	}
	for _, p := range problems {
		if c.say(p) {
			c.problems = append(c.problems, p)
		}
	}
}

// Images are the images the containers, init containers and ephemeral
// containers of the workloads among objs name (Pods, Deployments,
// StatefulSets, DaemonSets, ReplicaSets, ReplicationControllers, Jobs,
// CronJobs), in order. A reference that does not parse (or a container
// without one) is a problem whose file is chart.
func Images(chart string, objs []objdiff.Object) ([]Image, diag.List) {
	var out []Image
	var problems diag.List
	for _, o := range objs {
		path, ok := podSpecs[o.Kind]
		if !ok {
			continue
		}
		spec, ok := lookup(o.Body(), path)
		if !ok {
			continue
		}
		for _, list := range containerLists {
			containers, _ := spec[list].([]any)
			for i, ct := range containers {
				field := fmt.Sprintf("%s.%s[%d].image", strings.Join(path, "."), list, i)
				m, _ := ct.(map[string]any)
				ref, _ := m["image"].(string)
				im, err := parse(ref)
				if err != nil {
					problems.Errorf(chart, 0, o.String()+": "+field, "%v", err)
					continue
				}
				im.Object, im.Path = o.String(), field
				out = append(out, im)
			}
		}
	}
	return out, problems
}

// parse checks an image reference as a container runtime reads it
// (a registry host optional, as Docker Hub's "nginx:1.27").
func parse(ref string) (Image, error) {
	if ref == "" {
		return Image{}, fmt.Errorf("a container without an image")
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return Image{}, fmt.Errorf("image %q does not parse: %w", ref, err)
	}
	im := Image{Reference: ref}
	if d, ok := r.(name.Digest); ok {
		im.Digest = d.DigestStr()
	}
	return im, nil
}

// lookup is the map at path in body.
func lookup(body map[string]any, path []string) (map[string]any, bool) {
	m := body
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}
