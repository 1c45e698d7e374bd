package model

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/load"
)

// TestSlimSharesReferences: slimmed Targets keep their typed form and
// their references, and Targets naming the same Registry share one map of
// them (100,000 Targets, a namespace's naming one Registry, hold about
// 1,000).
func TestSlimSharesReferences(t *testing.T) {
	objs, problems := load.Bytes("in.yaml", []byte(`kind: Target
metadata: {name: a, namespace: ns, labels: {env: prod}}
spec: {renderRegistryRef: {name: r}, userdata: {site: one}}
---
kind: Target
metadata: {name: b, namespace: ns}
spec: {renderRegistryRef: {name: r}}
---
kind: Target
metadata: {name: c, namespace: ns}
spec: {renderRegistryRef: {name: other, namespace: shared}}
`), load.Options{})
	require.Empty(t, problems)
	var before [][]Named
	for _, o := range objs {
		before = append(before, ReferencesOf(o))
	}
	var sl Slimmer
	for i, o := range objs {
		typed, err := sl.Slim(o)
		require.NoError(t, err)
		assert.Equal(t, o.Name, typed.(*Target).Name)
		if o.Name == "a" {
			assert.Equal(t, "one", typed.(*Target).Spec.Userdata["site"], "the typed form is whole")
		}
		assert.Equal(t, before[i], ReferencesOf(o), "%s keeps its references", o.Name)
	}
	same := func(a, b *load.Object) bool {
		return reflect.ValueOf(a.Fields).UnsafePointer() == reflect.ValueOf(b.Fields).UnsafePointer()
	}
	assert.True(t, same(objs[0], objs[1]), "a and b name the same Registry: one map")
	assert.False(t, same(objs[0], objs[2]))
}

// TestSlimSharesLabels: Targets with equal labels share one map of them;
// other labels (a value with "=" in it included) are their own.
func TestSlimSharesLabels(t *testing.T) {
	objs, problems := load.Bytes("in.yaml", []byte(`kind: Target
metadata: {name: a, namespace: ns, labels: {env: prod, group: g0}}
---
kind: Target
metadata: {name: b, namespace: ns, labels: {group: g0, env: prod}}
---
kind: Target
metadata: {name: c, namespace: ns, labels: {env: prod, group: g1}}
---
kind: Target
metadata: {name: d, namespace: ns, labels: {"env": "prod=group"}}
---
kind: Target
metadata: {name: e, namespace: ns, labels: {"env=prod": "group"}}
`), load.Options{})
	require.Empty(t, problems)
	var sl Slimmer
	var labels []map[string]string
	for _, o := range objs {
		typed, err := sl.Slim(o)
		require.NoError(t, err)
		labels = append(labels, typed.(*Target).Labels)
	}
	same := func(i, j int) bool {
		return reflect.ValueOf(labels[i]).UnsafePointer() == reflect.ValueOf(labels[j]).UnsafePointer()
	}
	assert.True(t, same(0, 1), "a and b have the same labels: one map")
	assert.False(t, same(0, 2))
	assert.False(t, same(3, 4))
	assert.Equal(t, map[string]string{"env": "prod", "group": "g1"}, labels[2])
	assert.Equal(t, map[string]string{"env": "prod=group"}, labels[3])
	assert.Equal(t, map[string]string{"env=prod": "group"}, labels[4])
}
