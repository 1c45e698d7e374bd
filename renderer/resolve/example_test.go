package resolve_test

import (
	"fmt"

	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// Two releases share a uniqueName: the Target gets the one with the higher
// priority, and the plan says why it does not get the other.
func Example() {
	objs, problems := load.Bytes("in.yaml", []byte(`
kind: Registry
metadata: {name: render, namespace: ns}
spec: {hostname: registry.example.com}
---
kind: Target
metadata: {name: edge-1, namespace: ns}
spec: {renderRegistryRef: {name: render}}
---
kind: Release
metadata: {name: stable, namespace: ns}
spec: {chart: {repository: registry.example.com/app, tag: "1.0.0"}, uniqueName: app, priority: 10}
---
kind: Release
metadata: {name: canary, namespace: ns}
spec: {chart: {repository: registry.example.com/app, tag: "1.1.0"}, uniqueName: app, priority: 20}
---
kind: Profile
metadata: {name: stable, namespace: ns}
spec: {releaseRef: {name: stable}}
---
kind: Profile
metadata: {name: canary, namespace: ns}
spec: {releaseRef: {name: canary}}
`), load.Options{})
	if len(problems) > 0 {
		panic(problems)
	}
	set, err := model.NewSet(objs)
	if err != nil {
		panic(err)
	}
	plan, err := resolve.Resolve(set, resolve.Options{})
	if err != nil {
		panic(err)
	}
	for _, t := range plan.Targets {
		for _, sel := range t.Releases {
			fmt.Println(t.Name, "gets", resolve.Name(sel.Release), "as", sel.Names.App.Name)
		}
		for _, e := range t.Excluded {
			fmt.Println(t.Name, "does not get", resolve.Name(e.Release)+":", e.Reason)
		}
	}
	// Output:
	// edge-1 gets ns/canary as edge-1-app
	// edge-1 does not get ns/stable: uniqueName "app" is taken by ns/canary (priority 20, this release has 10)
}
