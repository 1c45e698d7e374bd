package chain

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// The first-contact objects (solar bootstrap-manifests), in the Flux
// namespace: an OCIRepository and a HelmRelease named Bootstrap, and the
// Secrets their pulls use.
const (
	Bootstrap  = "solar-bootstrap"
	PullSecret = Bootstrap + "-pull"
	CASecret   = Bootstrap + "-ca"
	// VerifySecret holds the public keys Flux verifies solar's charts
	// with (OCIRepository spec.verify, provider cosign: its *.pub entries).
	VerifySecret = Bootstrap + "-cosign"
)

// MaxName is Helm's limit for a release name; every name here stays within it,
// so a HelmRelease's Helm release carries its name unchanged.
const MaxName = 53

// Name is an object name that may have been cut to MaxName: Full is the name
// before cutting (kept in an annotation), Name the one on the cluster.
type Name struct {
	Name string `json:"name"`
	Full string `json:"full"`
}

// name is a name on the cluster: a Helm release name too, which charts put
// into names that take no dots (Services), so dots become dashes.
func name(full string) Name {
	return Name{Name: Cut(strings.ReplaceAll(full, ".", "-"), MaxName), Full: full}
}

// Release is the names of one release of a Target, level by level.
type Release struct {
	// Key is the release's uniqueName: unique among a Target's releases.
	Key string
	// Source (level 1, bootstrap chart): the OCIRepository and HelmRelease
	// that install the release chart, and that Helm release's name.
	Source Name
	// App (level 2, release chart): the OCIRepository and HelmRelease that
	// install the application chart.
	App Name
	// Values (level 2): the ConfigMap with the rendered valuesTemplate.
	Values Name
	// Credential (level 2): the Secret with an agent's kubeconfig, which the
	// HelmRelease reads with valuesFrom: a token never sits in its spec.
	Credential Name
	// TargetNamespace is where the application goes; empty: the Flux namespace.
	TargetNamespace string
	// AppRelease (level 3) is the Helm release helm-controller installs the
	// application as.
	AppRelease string
}

// For names the objects of one release of a Target. The release chart is
// shared by the Targets of a namespace, so the level-2 names carry the Target:
// one cluster may hold several Targets (each with its own Flux namespace)
// without two of them owning one application object.
func For(target, key, targetNamespace string) Release {
	app := name(target + "-" + key)
	return Release{
		Key:             key,
		Source:          name(Bootstrap + "-" + key),
		App:             app,
		Values:          name(app.Full + "-values"),
		Credential:      name(app.Full + "-credential"),
		TargetNamespace: targetNamespace,
		AppRelease:      HelmReleaseName(app.Name, targetNamespace),
	}
}

// HelmReleaseName is the Helm release helm-controller installs for a
// HelmRelease named name without spec.releaseName: [<targetNamespace>-]<name>,
// and beyond 53 characters its first 40, "-" and 12 hex digits of its sha256
// (helm-controller's release.ShortenName).
func HelmReleaseName(name, targetNamespace string) string {
	if targetNamespace != "" {
		name = targetNamespace + "-" + name
	}
	if len(name) <= MaxName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:MaxName-13] + "-" + hex.EncodeToString(sum[:])[:12]
}

// Cut shortens s to at most max characters: its first max-7, then "-" and six
// hex digits of its sha256, so different long values stay different. Names and
// label values stay valid: the cut part ends in a letter or digit.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	head := strings.TrimRight(s[:max-7], "-_.")
	return head + "-" + hex.EncodeToString(sum[:])[:6]
}

// Object is one object of the chain on a Target's cluster.
type Object struct {
	Level     int
	Kind      string
	Namespace string
	Name      string
}

func (o Object) String() string {
	return fmt.Sprintf("%s %s/%s (level %d)", o.Kind, o.Namespace, o.Name, o.Level)
}

// HelmStorage is the kind of a Helm release's storage (its Secrets
// sh.helm.release.v1.<name>.v<N>): release names are unique per storage
// namespace.
const HelmStorage = "Helm release"

// Objects enumerates the objects every level creates for a Target whose
// first-contact objects are in fluxNS, and the Helm releases of each level.
// The application chart's own objects are not known here: they are named
// after AppRelease, in TargetNamespace.
func Objects(fluxNS string, releases []Release) []Object {
	objs := []Object{
		{0, "Secret", fluxNS, PullSecret},
		{0, "Secret", fluxNS, CASecret},
		{0, "Secret", fluxNS, VerifySecret},
		{0, "OCIRepository", fluxNS, Bootstrap},
		{0, "HelmRelease", fluxNS, Bootstrap},
		{1, HelmStorage, fluxNS, Bootstrap},
	}
	for _, r := range releases {
		objs = append(objs,
			Object{1, "OCIRepository", fluxNS, r.Source.Name},
			Object{1, "HelmRelease", fluxNS, r.Source.Name},
			Object{2, HelmStorage, fluxNS, r.Source.Name},
			Object{2, "OCIRepository", fluxNS, r.App.Name},
			Object{2, "HelmRelease", fluxNS, r.App.Name},
			Object{2, "ConfigMap", fluxNS, r.Values.Name},
			Object{2, "Secret", fluxNS, r.Credential.Name},
			Object{3, HelmStorage, fluxNS, r.AppRelease},
		)
	}
	return objs
}

// Collisions returns, one line each, the objects that two entries of objs
// name alike: the same kind, namespace and name.
func Collisions(objs []Object) []string {
	type key struct{ kind, ns, name string }
	seen := map[key]Object{}
	var out []string
	for _, o := range objs {
		k := key{o.Kind, o.Namespace, o.Name}
		if prev, ok := seen[k]; ok {
			out = append(out, fmt.Sprintf("%s is also %s", o, prev))
			continue
		}
		seen[k] = o
	}
	return out
}

// DependsOn is the spec.dependsOn of a release's application HelmRelease
// (level 2 makes it) that is installed after deps: their application
// HelmReleases, by name, in its own namespace (the Flux namespace, as every
// HelmRelease of the chain). Only level 3 waits: the HelmReleases of levels
// 1 and 2 never name a dependency, so a release that waits holds no worker
// and blocks no parent.
func DependsOn(deps []Release) []map[string]any {
	if len(deps) == 0 {
		return nil
	}
	out := make([]map[string]any, len(deps))
	for i, d := range deps {
		out[i] = map[string]any{"name": d.App.Name}
	}
	return out
}
