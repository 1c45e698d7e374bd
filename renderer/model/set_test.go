package model

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
)

func set(t *testing.T, src string) *Set {
	t.Helper()
	objs, problems := load.Bytes("in.yaml", []byte(src), load.Options{})
	require.Empty(t, problems)
	s, err := NewSet(objs)
	require.NoError(t, err)
	return s
}

func TestResolveGrants(t *testing.T) {
	s := set(t, `kind: Registry
metadata: {name: a, namespace: shared}
---
kind: Registry
metadata: {name: b, namespace: shared}
---
kind: ReferenceGrant
metadata: {name: only-a, namespace: shared}
spec:
  from: [{group: solar.opendefense.cloud, kind: Target, namespace: alpha}]
  to: [{group: solar.opendefense.cloud, kind: Registry, name: a}]
`)
	for _, tc := range []struct {
		fromKind, fromNS, name string
		want                   error
	}{
		{api.KindTarget, "alpha", "a", nil},
		{api.KindTarget, "alpha", "b", ErrNotGranted},          // the grant names only a
		{api.KindTarget, "beta", "a", ErrNotGranted},           // another namespace
		{api.KindRegistryBinding, "alpha", "a", ErrNotGranted}, // another kind
		{api.KindTarget, "alpha", "missing", ErrNotGranted},    // not granted before not found
		{api.KindTarget, "shared", "missing", ErrNotFound},     // same namespace needs no grant
		{api.KindTarget, "shared", "b", nil},                   // same namespace
	} {
		r, err := Lookup[Registry](s, tc.fromKind, tc.fromNS, api.KindRegistry, Ref{Name: tc.name, Namespace: "shared"})
		if tc.want == nil {
			require.NoError(t, err, "%+v", tc)
			assert.Equal(t, tc.name, r.Name)
			continue
		}
		assert.True(t, errors.Is(err, tc.want), "%+v: got %v", tc, err)
		assert.Nil(t, r)
	}
}

func TestBindingsSelectors(t *testing.T) {
	s := set(t, `kind: Target
metadata: {name: a, namespace: ns, labels: {env: prod}}
---
kind: Target
metadata: {name: b, namespace: ns, labels: {env: dev}}
---
kind: Target
metadata: {name: c, namespace: other, labels: {env: prod}}
---
kind: Release
metadata: {name: all, namespace: ns}
---
kind: Release
metadata: {name: prod, namespace: ns}
---
kind: Profile
metadata: {name: all, namespace: ns}
spec: {releaseRef: {name: all}}
---
kind: Profile
metadata: {name: prod, namespace: ns}
spec:
  releaseRef: {name: prod}
  targetSelector:
    matchExpressions: [{key: env, operator: NotIn, values: [dev]}]
---
kind: ReleaseBinding
metadata: {name: to-other, namespace: ns}
spec: {targetRef: {name: c, namespace: other}, releaseRef: {name: prod}}
`)
	bs, err := s.Bindings()
	require.NoError(t, err)
	var got []string
	for _, b := range bs {
		got = append(got, b.Target.Namespace+"/"+b.Target.Name+" "+b.Release.Name)
	}
	assert.Equal(t, []string{"ns/a all", "ns/a prod", "ns/b all"}, got,
		"a missing selector matches every Target of the namespace, never another namespace's; an ungranted binding binds nothing")
}

// TestGrantOnlyInTheReferencedNamespace: a ReferenceGrant counts only in the
// namespace of the objects it opens up; one that sits anywhere else (in the
// referring namespace, in a third one) grants nothing: fail closed.
func TestGrantOnlyInTheReferencedNamespace(t *testing.T) {
	grant := func(ns string) string {
		return `
---
kind: ReferenceGrant
metadata: {name: g, namespace: ` + ns + `}
spec:
  from: [{group: solar.opendefense.cloud, kind: Target, namespace: alpha}]
  to: [{group: solar.opendefense.cloud, kind: Registry}]
`
	}
	registry := "kind: Registry\nmetadata: {name: r, namespace: shared}\n"
	for ns, want := range map[string]error{"shared": nil, "alpha": ErrNotGranted, "other": ErrNotGranted} {
		s := set(t, registry+grant(ns))
		_, err := Lookup[Registry](s, api.KindTarget, "alpha", api.KindRegistry, Ref{Name: "r", Namespace: "shared"})
		if want == nil {
			assert.NoError(t, err, "a grant in %s", ns)
		} else {
			assert.ErrorIs(t, err, want, "a grant in %s", ns)
		}
	}
}
