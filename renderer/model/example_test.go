package model_test

import (
	"fmt"

	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// A Profile binds its Release to every Target of its namespace that its
// selector matches; an empty selector matches them all.
func Example() {
	objs, problems := load.Bytes("in.yaml", []byte(`
kind: Target
metadata: {name: edge-1, namespace: ns}
spec: {renderRegistryRef: {name: render}}
---
kind: Release
metadata: {name: agent, namespace: ns}
spec: {chart: {repository: registry.example.com/agent, tag: "1.0.0"}}
---
kind: Profile
metadata: {name: everywhere, namespace: ns}
spec: {releaseRef: {name: agent}, targetSelector: {}}
`), load.Options{})
	if len(problems) > 0 {
		panic(problems)
	}
	set, err := model.NewSet(objs)
	if err != nil {
		panic(err)
	}
	bindings, err := set.Bindings()
	if err != nil {
		panic(err)
	}
	for _, b := range bindings {
		fmt.Println(b.Target.Name, b.Release.Name, b.Via)
	}
	// Output: edge-1 agent Profile ns/everywhere
}
