package chart

import (
	"cmp"
	"maps"
	"strings"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// maxLabel is the length limit of a Kubernetes label value.
const maxLabel = 63

// Release is the release chart of a selected release. It holds nothing of the
// Target: Targets that get the same Release share it, and what differs per
// Target (the pull secret, the rendered valuesTemplate) comes through the
// values the bootstrap chart passes (see TargetValues). opts are the
// operator's settings of its HelmRelease.
func Release(sel *resolve.Selected, opts AppOptions) *Source {
	r := sel.Release
	name := resolve.Name(r)
	values := map[string]any{
		"interval":      Interval.String(),
		"layerSelector": asValues(LayerSelector()),
		"remediation":   asValues(AppPolicy(r.Spec.TargetNamespace != "", opts)),
		"chart": map[string]any{
			"url":      "oci://" + sel.Chart.Repository,
			"tag":      sel.Chart.Tag,
			"digest":   sel.Chart.Digest,
			"insecure": sel.Chart.Insecure,
		},
		"release": map[string]any{
			"name":            name,
			"label":           chain.Cut(r.Namespace+"."+r.Name, maxLabel),
			"targetNamespace": r.Spec.TargetNamespace,
			"values":          orEmpty(r.Spec.Values),
		},
		"pullSecret":         "",
		"valuesFromTemplate": "",
		// Set per Target by the bootstrap chart (TargetValues).
		"names": names(chain.Release{}),
	}
	return &Source{
		Name:        "release-" + r.Name,
		Description: "Release " + name + " rendered by solar",
		AppVersion:  cmp.Or(sel.Chart.AppVersion, sel.Chart.Tag, sel.Chart.Digest),
		Annotations: map[string]string{api.AnnotationRelease: name},
		Values:      values,
		Templates:   "release",
	}
}

// Agent is the release chart of an agent Release for one Target: the release
// chart with the Target's kubeconfig and name ("kubeconfig" and "target", what
// charts/solar-agent reads) as the credential. The chart puts them into a
// Secret that its HelmRelease reads with valuesFrom: the token never sits in
// a HelmRelease's spec on the cluster.
func Agent(sel *resolve.Selected, opts AppOptions, target string, kubeconfig []byte) *Source {
	src := Release(sel, opts)
	if repo, dgst, ok := strings.Cut(opts.AgentImage, "@"); ok {
		release := src.Values["release"].(map[string]any)
		release["values"] = withImage(release["values"].(map[string]any), repo, dgst)
	}
	src.Values["credential"] = map[string]any{"kubeconfig": string(kubeconfig), "target": target}
	return src
}

// withImage is values with image.repository and image.digest set where
// values leave them unset (a copy: values are the Release's own).
func withImage(values map[string]any, repo, dgst string) map[string]any {
	out := maps.Clone(values)
	image, _ := values["image"].(map[string]any)
	image = maps.Clone(image)
	if image == nil {
		image = map[string]any{}
	}
	if _, set := image["repository"]; !set {
		image["repository"] = repo
		if _, set := image["digest"]; !set {
			image["digest"] = dgst
		}
	}
	out["image"] = image
	return out
}

// TargetValues are the values the bootstrap chart gives the release chart of
// sel: what differs per Target, and the names of the release chart's objects.
func TargetValues(sel *resolve.Selected) map[string]any {
	values := map[string]any{"names": names(sel.Names)}
	if sel.PullSecret != "" {
		values["pullSecret"] = sel.PullSecret
	}
	if sel.RenderedValues != "" {
		values["valuesFromTemplate"] = sel.RenderedValues
	}
	// The release chart puts .Values.remediation into its HelmRelease's spec
	// as it is, and Helm merges these values over the chart's own: dependsOn
	// joins the policy there, for this Target only, and neither the release
	// chart (shared by the Targets of its namespace) nor a bootstrap chart
	// without dependencies changes.
	if len(sel.DependsOn) > 0 {
		deps := make([]chain.Release, len(sel.DependsOn))
		for i, d := range sel.DependsOn {
			deps[i] = d.Names
		}
		var list []any
		for _, d := range chain.DependsOn(deps) {
			list = append(list, d)
		}
		values["remediation"] = map[string]any{"dependsOn": list}
	}
	return values
}

// Ref is a published release chart: what the bootstrap chart points at.
type Ref struct {
	// URL is oci://HOST[/PREFIX]/<repository>.
	URL     string
	Version string
}

// Bootstrap is the bootstrap chart of a Target: for every selected release, in
// order, an OCIRepository pinned to refs[i] and a HelmRelease of it with the
// release's TargetValues. Its pull secret and TLS setting are those of the
// render registry.
func Bootstrap(t *resolve.Resolution, refs []Ref) *Source {
	tt := t.Target
	releases := []any{}
	for i, sel := range t.Releases {
		releases = append(releases, map[string]any{
			"key":     sel.UniqueName,
			"name":    nameValue(sel.Names.Source),
			"release": resolve.Name(sel.Release),
			"label":   chain.Cut(sel.Release.Namespace+"."+sel.Release.Name, maxLabel),
			"url":     refs[i].URL,
			"version": refs[i].Version,
			"values":  TargetValues(sel),
		})
	}
	// The HelmRelease that installs the bootstrap chart may override these
	// with the Secrets of the cluster (solar bootstrap-manifests does).
	registry := map[string]any{"pullSecret": "", "certSecret": "", "insecure": false, "verifySecret": ""}
	if reg := t.RenderRegistry; reg != nil {
		registry["pullSecret"] = t.PullSecrets[reg.Spec.Hostname]
		registry["insecure"] = reg.Spec.PlainHTTP
	}
	return &Source{
		Name:        chain.BootstrapChart(tt.Name),
		Description: "Bootstrap chart of Target " + tt.Namespace + "/" + tt.Name + " rendered by solar",
		Annotations: map[string]string{api.AnnotationTarget: tt.Namespace + "/" + tt.Name},
		Values: map[string]any{
			"interval":      Interval.String(),
			"layerSelector": asValues(LayerSelector()),
			"remediation":   asValues(ChainPolicy()),
			"target":        map[string]any{"name": tt.Name, "namespace": tt.Namespace},
			"userdata":      orEmpty(tt.Spec.Userdata),
			"registry":      registry,
			"releases":      releases,
		},
		Templates: "bootstrap",
	}
}

// orEmpty keeps a missing map an empty one in values.yaml ({} rather than null),
// so templates can range over it.
func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// names are the level-2 names as the release chart reads them.
func names(r chain.Release) map[string]any {
	return map[string]any{"app": nameValue(r.App), "values": nameValue(r.Values), "credential": nameValue(r.Credential)}
}

func nameValue(n chain.Name) map[string]any {
	return map[string]any{"name": n.Name, "full": n.Full}
}
