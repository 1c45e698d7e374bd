// Command genobjects writes a synthetic, valid SolAr input tree for benchmarks:
// one file per namespace, 21 objects each (a Registry, a Component, a
// ComponentVersion, 5 Releases, 5 Profiles, 5 labelled Targets, 2 ReleaseBindings,
// 1 RegistryBinding).
//
//	go run ./scripts/genobjects -n 10000 -out /tmp/objects
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const perNamespace = 21

func main() {
	n := flag.Int("n", 10000, "number of objects (rounded up to a multiple of 21)")
	out := flag.String("out", "", "directory to write to (required)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "genobjects: -out is required")
		os.Exit(1)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "genobjects:", err)
		os.Exit(1)
	}
	for i := 0; i*perNamespace < *n; i++ {
		ns := fmt.Sprintf("ns-%04d", i)
		if err := os.WriteFile(filepath.Join(*out, ns+".yaml"), []byte(namespace(ns)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genobjects:", err)
			os.Exit(1)
		}
	}
}

func namespace(ns string) string {
	var b strings.Builder
	obj := func(kind, name, body string) {
		fmt.Fprintf(&b, "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\n%s", kind, name, ns, body)
	}
	obj("Registry", "render", "spec:\n  hostname: registry.example.com\n  targetPullSecretName: pull\n")
	obj("Component", "app", "spec:\n  description: an app\n")
	obj("ComponentVersion", "app-1-0-0", `spec:
  componentRef: {name: app}
  tag: 1.0.0
  resources:
    chart:
      repository: registry.example.com/charts/app
      tag: 1.0.0
      helm: {name: app, version: 1.0.0}
  entrypoint: {resourceName: chart, type: helm}
`)
	for r := range 5 {
		obj("Release", fmt.Sprintf("release-%d", r), fmt.Sprintf(`  labels: {tier: t%d}
spec:
  componentVersionRef: {name: app-1-0-0}
  uniqueName: app-%d
  priority: %d
  targetNamespace: apps
  antiAffinity:
    matchExpressions:
      - {key: tier, operator: In, values: [none]}
  values:
    replicaCount: %d
    image: {tag: "1.0.0"}
`, r, r%3, r, r+1))
		obj("Profile", fmt.Sprintf("profile-%d", r), fmt.Sprintf(`spec:
  releaseRef: {name: release-%d}
  targetSelector:
    matchLabels: {group: g%d}
    matchExpressions:
      - {key: env, operator: NotIn, values: [dev]}
`, r, r%2))
		obj("Target", fmt.Sprintf("target-%d", r), fmt.Sprintf(`  labels: {group: g%d, env: prod}
spec:
  renderRegistryRef: {name: render}
  userdata: {site: s%d}
`, r%2, r))
	}
	for r := range 2 {
		obj("ReleaseBinding", fmt.Sprintf("binding-%d", r), fmt.Sprintf("spec:\n  targetRef: {name: target-%d}\n  releaseRef: {name: release-%d}\n", r, 4-r))
	}
	obj("RegistryBinding", "pull", "spec:\n  targetRef: {name: target-0}\n  registryRef: {name: render}\n")
	return b.String()
}
