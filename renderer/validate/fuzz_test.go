package validate

import (
	"testing"

	"github.com/solar-pipeline/solar/renderer/load"
)

// FuzzValidate: whatever objects a file holds, validation returns problems
// with a file, never panics, and a set only of what passed.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata: {name: t}\nspec: {renderRegistryRef: {name: r}, userdata: {a: [1, {b: c}]}}\n",
		"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Release\nmetadata: {name: r}\nspec: {chart: {repository: registry.example.com/a, tag: \"1\", digest: x}, priority: 99999999999}\n",
		"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Release\nmetadata: {name: r}\nspec: {chart: {repository: registry.example.com/a, tag: \"1\"}, values: {id: 123456789012345678901234567890}}\n",
		"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Profile\nmetadata: {name: p}\nspec: {releaseRef: {name: r}, targetSelector: {matchExpressions: [{key: a, operator: In}]}}\n",
		"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: ReferenceGrant\nmetadata: {name: g}\nspec: {from: [{group: x, kind: RenderTask, namespace: n}], to: [{group: solar.opendefense.cloud, kind: Target}]}\n",
		"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: ComponentVersion\nmetadata: {name: c}\nspec: {componentRef: {name: c}, tag: \"1\", resources: {x: {repository: r.io/a, tag: \"1\"}}, entrypoint: {resourceName: y, type: kro}}\n",
		"kind: Widget\n",
		// The shapes of messages.go: a wrong kind, an empty value, an unknown
		// field beside another error, an unquoted version, a broken entry.
		"apiVersion: solar.opendefense.cloud/v1alpha2\nkind: Registry\nmetadata: {name: r, labels: {a: 1.10}}\nspec: {hostnmae: h, plainHTTP: \"yes\", scanInterval: 1 day}\n",
		"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Profile\nmetadata: {name: p}\nspec:\n  releaseRef:\n  targetSelector: [a]\n",
		"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: ReferenceGrant\nmetadata: {name: g}\nspec: {from: [{group: x, kind: Release, namespace: NS}], to: [{group: y, kind: 1.0}]}\n",
		"apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Release\nmetadata: {name: r}\nspec: {chart: {repository: r.io/a, tag: 6.10}, priority: high, values: {t: [1.10, 0x1F]}}\n",
	} {
		f.Add([]byte(seed))
	}
	v, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, _ := load.Bytes("fuzz.yaml", data, load.Options{})
		set, problems := v.Validate(objs)
		for _, p := range problems {
			if p.File != "fuzz.yaml" && p.File != "" {
				t.Fatalf("problem without the file: %v", p)
			}
		}
		if set == nil && !problems.HasErrors() {
			t.Fatal("no set and no error")
		}
	})
}
