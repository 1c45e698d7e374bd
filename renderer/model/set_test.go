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

// TestRolloutDecodes: a Rollout keeps its waves in order, and an optional
// threshold written as 0 differs from one left out.
func TestRolloutDecodes(t *testing.T) {
	s := set(t, `kind: Rollout
metadata: {name: edge, namespace: alpha}
spec:
  selector: {matchLabels: {tier: edge}}
  waves:
    - {name: canary, count: 1, errorThreshold: 0, progressDeadline: 10m, approval: true}
    - {name: third, percent: 34}
    - {name: rest}
  windows: [{schedule: "0 22 * * 1-5", duration: 4h, timeZone: Europe/Berlin}]
  onFailure: Rollback
`)
	require.Len(t, s.Rollouts, 1)
	r := Get[Rollout](s, api.KindRollout, "alpha", "edge")
	require.Same(t, s.Rollouts[0], r)
	assert.Equal(t, map[string]string{"tier": "edge"}, r.Spec.Selector.MatchLabels)
	require.Len(t, r.Spec.Waves, 3)
	canary := r.Spec.Waves[0]
	assert.Equal(t, "canary", canary.Name)
	assert.Equal(t, 1, *canary.Count)
	assert.Nil(t, canary.Percent)
	require.NotNil(t, canary.ErrorThreshold, "0 written is not unset")
	assert.Equal(t, 0, *canary.ErrorThreshold)
	assert.Nil(t, canary.SuccessThreshold)
	assert.Equal(t, "10m", canary.ProgressDeadline)
	assert.True(t, canary.Approval)
	assert.Equal(t, 34, *r.Spec.Waves[1].Percent)
	assert.Equal(t, RolloutWave{Name: "rest"}, r.Spec.Waves[2])
	assert.Equal(t, []RolloutWindow{{Schedule: "0 22 * * 1-5", Duration: "4h", TimeZone: "Europe/Berlin"}}, r.Spec.Windows)
	assert.Equal(t, "Rollback", r.Spec.OnFailure)
}
