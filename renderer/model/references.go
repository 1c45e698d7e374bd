package model

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
)

// Reference is a field of a kind that names an object of another kind:
// the one table of them, which validation checks (each must resolve, a
// cross-namespace one only with a grant) and a namespace's scope follows.
type Reference struct {
	// From is the kind that refers; Field the reference's path in it.
	From, Field string
	// To is the kind referred to.
	To string
	// Local: the field names an object of the referring object's own
	// namespace (a LocalRef); else it may name another namespace (a Ref).
	Local bool
	// Optional: the field may be absent; else an absent field names "".
	Optional bool
}

// References are every reference between the objects solar reads, by
// referring kind in the order of api.Kinds. A DeviceUpgrade names its Devices by
// device id, or by labels, in its own namespace: no reference by name, so
// none here (fleet.Resolve checks them).
var References = []Reference{
	{From: api.KindTarget, Field: "spec.renderRegistryRef", To: api.KindRegistry},
	{From: api.KindProfile, Field: "spec.releaseRef", To: api.KindRelease, Local: true},
	{From: api.KindRelease, Field: "spec.componentVersionRef", To: api.KindComponentVersion, Optional: true},
	{From: api.KindComponentVersion, Field: "spec.componentRef", To: api.KindComponent, Local: true},
	{From: api.KindReleaseBinding, Field: "spec.targetRef", To: api.KindTarget},
	{From: api.KindReleaseBinding, Field: "spec.releaseRef", To: api.KindRelease, Local: true},
	{From: api.KindRegistryBinding, Field: "spec.targetRef", To: api.KindTarget},
	{From: api.KindRegistryBinding, Field: "spec.registryRef", To: api.KindRegistry},
	{From: api.KindPipelineConfig, Field: "spec.registries.mirror.registryRef", To: api.KindRegistry, Optional: true},
}

// Named is one reference of an object, and the Ref it holds.
type Named struct {
	Reference
	Ref Ref
}

// ID is what the reference names, read from an object of namespace ns.
func (n Named) ID(ns string) load.ID {
	return load.ID{Kind: n.To, Namespace: cmp.Or(n.Ref.Namespace, ns), Name: n.Ref.Name}
}

// ReferencesOf are the references the loaded object o holds, in table
// order; an absent optional one is left out. A Local reference's namespace
// is o's own, whatever the field says.
func ReferencesOf(o *load.Object) []Named {
	var out []Named
	for _, r := range References {
		if r.From != o.Kind {
			continue
		}
		fields, present := field(o.Fields, r.Field)
		if !present && r.Optional {
			continue
		}
		n := Named{Reference: r}
		n.Ref.Name, _ = fields["name"].(string)
		if !r.Local {
			n.Ref.Namespace, _ = fields["namespace"].(string)
		}
		out = append(out, n)
	}
	return out
}

// field is the object at the dotted path of fields, and whether it is
// there.
func field(fields map[string]any, path string) (map[string]any, bool) {
	for _, key := range strings.Split(path, ".") {
		next, ok := fields[key].(map[string]any)
		if !ok {
			return nil, false
		}
		fields = next
	}
	return fields, true
}

// Resolve follows the reference n from an object of namespace fromNS, as
// Lookup does: ErrNotGranted for a cross-namespace reference no
// ReferenceGrant allows, else a NotFoundError when nothing has that name.
func (s *Set) Resolve(fromNS string, n Named) error {
	id := n.ID(fromNS)
	if id.Namespace != fromNS && !s.Granted(n.From, fromNS, id.Kind, id.Namespace, id.Name) {
		return fmt.Errorf("%s %s/%s: no ReferenceGrant in namespace %q allows %s from namespace %q: %w",
			id.Kind, id.Namespace, id.Name, id.Namespace, n.From, fromNS, ErrNotGranted)
	}
	if s.byID[id] == nil {
		return &NotFoundError{ID: id}
	}
	return nil
}
