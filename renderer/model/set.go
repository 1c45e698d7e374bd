package model

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
)

// Sentinel reasons a reference does not resolve; test them with errors.Is.
var (
	// ErrNotFound: no object of that kind, namespace and name.
	ErrNotFound = errors.New("NotFound")
	// ErrNotGranted: the object is in another namespace and no ReferenceGrant
	// there allows the reference. Cross-namespace references fail closed.
	ErrNotGranted = errors.New("NotGranted")
)

// Set is a typed, indexed set of valid objects. Its slices are sorted by
// namespace and name.
type Set struct {
	Targets           []*Target
	Profiles          []*Profile
	Releases          []*Release
	Components        []*Component
	ComponentVersions []*ComponentVersion
	Registries        []*Registry
	ReleaseBindings   []*ReleaseBinding
	RegistryBindings  []*RegistryBinding
	ReferenceGrants   []*ReferenceGrant
	PipelineConfigs   []*PipelineConfig
	Devices           []*Device
	DeviceUpgrades    []*DeviceUpgrade
	Rollouts          []*Rollout

	byID    map[load.ID]any
	sources map[load.ID]*load.Object
	// bindings are computed once, for the policies and for resolve.
	bindings struct {
		once sync.Once
		list []Binding
		err  error
	}
	// plainHTTP are the hosts a Registry serves over plain HTTP, found
	// once (resolve asks for every release of every Target).
	plainHTTP struct {
		once  sync.Once
		hosts map[string]bool
	}
}

// PlainHTTP: a Registry of the set serves host over plain HTTP.
func (s *Set) PlainHTTP(host string) bool {
	s.plainHTTP.once.Do(func() {
		s.plainHTTP.hosts = map[string]bool{}
		for _, r := range s.Registries {
			if r.Spec.PlainHTTP {
				s.plainHTTP.hosts[r.Spec.Hostname] = true
			}
		}
	})
	return s.plainHTTP.hosts[host]
}

// NewSet decodes objects that passed schema validation. Objects of kinds solar
// does not read (TargetReport) are indexed by source only.
func NewSet(objs []*load.Object) (*Set, error) {
	return NewSetOf(objs, nil)
}

// NewSetOf is NewSet of objects some of which were decoded already: their
// typed forms, by object (Slim's).
func NewSetOf(objs []*load.Object, decoded map[*load.Object]any) (*Set, error) {
	s := &Set{byID: map[load.ID]any{}, sources: map[load.ID]*load.Object{}}
	for _, o := range objs {
		var err error
		switch o.Kind {
		case api.KindTarget:
			if t, ok := decoded[o].(*Target); ok {
				s.Targets = insert(s, o, s.Targets, t)
				break
			}
			s.Targets, err = add(s, o, s.Targets)
		case api.KindProfile:
			s.Profiles, err = add(s, o, s.Profiles)
		case api.KindRelease:
			s.Releases, err = add(s, o, s.Releases)
		case api.KindComponent:
			s.Components, err = add(s, o, s.Components)
		case api.KindComponentVersion:
			s.ComponentVersions, err = add(s, o, s.ComponentVersions)
		case api.KindRegistry:
			s.Registries, err = add(s, o, s.Registries)
		case api.KindReleaseBinding:
			s.ReleaseBindings, err = add(s, o, s.ReleaseBindings)
		case api.KindRegistryBinding:
			s.RegistryBindings, err = add(s, o, s.RegistryBindings)
		case api.KindReferenceGrant:
			s.ReferenceGrants, err = add(s, o, s.ReferenceGrants)
		case api.KindPipelineConfig:
			s.PipelineConfigs, err = add(s, o, s.PipelineConfigs)
		case api.KindDevice:
			s.Devices, err = add(s, o, s.Devices)
		case api.KindDeviceUpgrade:
			s.DeviceUpgrades, err = add(s, o, s.DeviceUpgrades)
		case api.KindRollout:
			s.Rollouts, err = add(s, o, s.Rollouts)
		}
		if err != nil {
			return nil, fmt.Errorf("decoding %s at %s: %w", o.ID(), o.Pos(), err)
		}
		s.sources[o.ID()] = o
	}
	return s, nil
}

// named is every typed object: they all embed Meta.
type named interface{ meta() *Meta }

func (m *Meta) meta() *Meta { return m }

func add[T any, PT interface {
	*T
	named
}](s *Set, o *load.Object, list []PT) ([]PT, error) {
	v, err := decode[T](o)
	if err != nil {
		return list, err
	}
	return insert(s, o, list, PT(v)), nil
}

// insert adds the typed form v of o to list, in order, and to the index.
func insert[T any, PT interface {
	*T
	named
}](s *Set, o *load.Object, list []PT, v PT) []PT {
	s.byID[o.ID()] = v
	i, _ := slices.BinarySearchFunc(list, v, func(a, b PT) int {
		return cmp.Or(cmp.Compare(a.meta().Namespace, b.meta().Namespace), cmp.Compare(a.meta().Name, b.meta().Name))
	})
	return slices.Insert(list, i, v)
}

// Loaded returns the loaded object with that identity, for positions in problems.
func (s *Set) Loaded(kind, namespace, name string) *load.Object {
	return s.sources[load.ID{Kind: kind, Namespace: namespace, Name: name}]
}

// Objects are the loaded objects of the set, by kind, namespace and name.
func (s *Set) Objects() []*load.Object {
	out := slices.Collect(maps.Values(s.sources))
	slices.SortFunc(out, func(a, b *load.Object) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Get returns the typed object of that kind, namespace and name, or nil.
func Get[T any](s *Set, kind, namespace, name string) *T {
	v, _ := s.byID[load.ID{Kind: kind, Namespace: namespace, Name: name}].(*T)
	return v
}

// Lookup follows a reference from an object of kind fromKind in namespace
// fromNS to an object of kind toKind. It fails with ErrNotGranted for a
// cross-namespace reference no ReferenceGrant allows, else ErrNotFound when the
// object does not exist.
func Lookup[T any](s *Set, fromKind, fromNS, toKind string, ref Ref) (*T, error) {
	n := Named{Reference: Reference{From: fromKind, To: toKind}, Ref: ref}
	if err := s.Resolve(fromNS, n); err != nil {
		return nil, err
	}
	id := n.ID(fromNS)
	return Get[T](s, id.Kind, id.Namespace, id.Name), nil
}

// NotFoundError names the object a reference did not find; it is ErrNotFound.
type NotFoundError struct{ ID load.ID }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %s/%s: %v", e.ID.Kind, e.ID.Namespace, e.ID.Name, ErrNotFound)
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// Granted reports whether a ReferenceGrant in toNS allows objects of kind
// fromKind in fromNS to refer to the toKind object named toName.
func (s *Set) Granted(fromKind, fromNS, toKind, toNS, toName string) bool {
	// The grants are sorted by namespace: those of toNS only, not every
	// grant for each reference (a shared namespace's Profiles bind the
	// Targets of a thousand namespaces).
	i, _ := slices.BinarySearchFunc(s.ReferenceGrants, toNS, func(g *ReferenceGrant, ns string) int { return cmp.Compare(g.Namespace, ns) })
	for _, g := range s.ReferenceGrants[i:] {
		if g.Namespace != toNS {
			break
		}
		from := slices.ContainsFunc(g.Spec.From, func(f GrantFrom) bool {
			return f.Group == api.Group && f.Kind == fromKind && f.Namespace == fromNS
		})
		to := slices.ContainsFunc(g.Spec.To, func(t GrantTo) bool {
			return t.Group == api.Group && t.Kind == toKind && (t.Name == "" || t.Name == toName)
		})
		if from && to {
			return true
		}
	}
	return false
}

// Binding is one Release bound to one Target, by a Profile or a ReleaseBinding.
type Binding struct {
	Target  *Target
	Release *Release
	// Via is the Profile or ReleaseBinding that made the binding (held
	// once by all its bindings: 100,000 Targets have 500,000 bindings).
	Via *load.ID
}

// Bindings returns every binding the Profiles and ReleaseBindings make, sorted by
// Target, Release and Via. References that do not resolve bind nothing; vet
// reports them. They are computed once per set: the policies and resolve
// share them, and neither may change them.
func (s *Set) Bindings() ([]Binding, error) {
	s.bindings.once.Do(func() { s.bindings.list, s.bindings.err = s.bind() })
	return s.bindings.list, s.bindings.err
}

func (s *Set) bind() ([]Binding, error) {
	var out []Binding
	byNamespace, reach := s.targetsByNamespace(), s.profileReach()
	for _, p := range s.Profiles {
		r := Get[Release](s, api.KindRelease, p.Namespace, p.Spec.ReleaseRef.Name)
		if r == nil {
			continue
		}
		sel, err := Selector(p.Spec.TargetSelector)
		if err != nil {
			return nil, fmt.Errorf("Profile %s/%s: spec.targetSelector: %w", p.Namespace, p.Name, err)
		}
		via := &load.ID{Kind: api.KindProfile, Namespace: p.Namespace, Name: p.Name}
		// Only the namespaces that may hold its Targets: matching every
		// Target against every Profile is quadratic.
		for _, ns := range append([]string{p.Namespace}, reach[p.Namespace]...) {
			for _, t := range byNamespace[ns] {
				if sel.Matches(labels.Set(t.Labels)) && s.ProfileGranted(p.Namespace, t) {
					out = append(out, Binding{Target: t, Release: r, Via: via})
				}
			}
		}
	}
	for _, b := range s.ReleaseBindings {
		r := Get[Release](s, api.KindRelease, b.Namespace, b.Spec.ReleaseRef.Name)
		t, err := Lookup[Target](s, api.KindReleaseBinding, b.Namespace, api.KindTarget, b.Spec.TargetRef)
		if r == nil || err != nil {
			continue
		}
		out = append(out, Binding{Target: t, Release: r, Via: &load.ID{Kind: api.KindReleaseBinding, Namespace: b.Namespace, Name: b.Name}})
	}
	slices.SortFunc(out, func(a, b Binding) int {
		if c := cmp.Or(
			cmp.Compare(a.Target.Namespace, b.Target.Namespace), cmp.Compare(a.Target.Name, b.Target.Name),
			cmp.Compare(a.Release.Namespace, b.Release.Namespace), cmp.Compare(a.Release.Name, b.Release.Name)); c != 0 {
			return c
		}
		// Rare (one release bound twice): the string is built only then.
		return cmp.Compare(a.Via.String(), b.Via.String())
	})
	return out, nil
}

// Selector converts a label selector; nil and empty both match everything.
func Selector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(ls)
}
