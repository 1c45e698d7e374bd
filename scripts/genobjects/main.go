// Command genobjects writes a synthetic, valid SolAr input tree for benchmarks:
// one file per namespace, each with a Registry, a Component, a
// ComponentVersion, 5 Releases, 5 Profiles, T labelled Targets (-per, default
// 5: 21 objects), 2 ReleaseBindings and 1 RegistryBinding. Every Target gets
// the 5 Releases, so a namespace has 5 release charts and T bootstrap charts.
//
//	go run ./scripts/genobjects -n 10000 -out /tmp/objects
//	go run ./scripts/genobjects -targets 10000 -per 100 -registry 127.0.0.1:5000 -out /tmp/objects
//
// -change P changes the userdata of P percent of the Targets (one in 100/P),
// with the same flags otherwise: the "1 % change" of scripts/bench.
// -change-release gives release-0 other values, so its chart and every
// bootstrap chart changes (the kill tests want both kinds of chart to change).
// -app-registry HOST[:PORT] puts the application chart (app:1.0.0) there, a
// plain-HTTP registry (a Registry with plainHTTP and a PipelineConfig that
// allows it, in the first namespace), so that solar diff renders it (level 3):
// scripts/bench pushes a chart of helm create's there.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	n := flag.Int("n", 10000, "number of objects (rounded up to whole namespaces)")
	targets := flag.Int("targets", 0, "number of Targets instead of -n (rounded up to whole namespaces)")
	per := flag.Int("per", 5, "Targets per namespace")
	registry := flag.String("registry", "registry.example.com", "hostname of the render Registry")
	change := flag.Int("change", 0, "percentage of Targets with other userdata (1 to 100)")
	changeRelease := flag.Bool("change-release", false, "give release-0 other values")
	appRegistry := flag.String("app-registry", "", "plain-HTTP registry (HOST[:PORT]) of the application chart charts/app:1.0.0; default registry.example.com")
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
	if *per < 2 {
		fmt.Fprintln(os.Stderr, "genobjects: -per must be at least 2 (the ReleaseBindings name two Targets)")
		os.Exit(1)
	}
	namespaces := (*n + *per + 16 - 1) / (*per + 16)
	if *targets > 0 {
		namespaces = (*targets + *per - 1) / *per
	}
	sh := shape{per: *per, registry: *registry, changeRelease: *changeRelease, appRegistry: *appRegistry}
	if *change > 0 {
		sh.every = 100 / min(*change, 100)
	}
	for i := range namespaces {
		ns := fmt.Sprintf("ns-%04d", i)
		if err := os.WriteFile(filepath.Join(*out, ns+".yaml"), []byte(namespace(ns, i**per, sh)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genobjects:", err)
			os.Exit(1)
		}
	}
}

// shape is what every namespace file has in common.
type shape struct {
	per           int    // Targets per namespace
	registry      string // hostname of the render Registry
	every         int    // every how many Targets one has other userdata; 0: none
	changeRelease bool   // release-0 has other values
	appRegistry   string // plain-HTTP registry of the application chart; "": registry.example.com
}

// namespace is the file of one namespace, whose first Target is the first-th
// overall.
func namespace(ns string, first int, sh shape) string {
	var b strings.Builder
	obj := func(kind, name, body string) {
		fmt.Fprintf(&b, "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\n%s", kind, name, ns, body)
	}
	obj("Registry", "render", "spec:\n  hostname: "+sh.registry+"\n  targetPullSecretName: pull\n")
	obj("Component", "app", "spec:\n  description: an app\n")
	apps := "registry.example.com"
	if sh.appRegistry != "" {
		apps = sh.appRegistry
		obj("Registry", "charts", "spec:\n  hostname: "+apps+"\n  plainHTTP: true\n")
		if first == 0 {
			obj("PipelineConfig", "bench", "spec:\n  registries: {allowInsecure: true}\n")
		}
	}
	obj("ComponentVersion", "app-1-0-0", `spec:
  componentRef: {name: app}
  tag: 1.0.0
  resources:
    chart:
      repository: `+apps+`/charts/app
      tag: 1.0.0
      helm: {name: app, version: 1.0.0}
  entrypoint: {resourceName: chart, type: helm}
`)
	for r := range 5 {
		replicas := r + 1
		if r == 0 && sh.changeRelease {
			replicas = 10
		}
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
`, r, r, r, replicas))
		obj("Profile", fmt.Sprintf("profile-%d", r), fmt.Sprintf(`spec:
  releaseRef: {name: release-%d}
  targetSelector:
    matchLabels: {env: prod}
    matchExpressions:
      - {key: group, operator: NotIn, values: [dev]}
`, r))
	}
	for t := range sh.per {
		site := fmt.Sprintf("s%d", t)
		if sh.every > 0 && (first+t)%sh.every == 0 {
			site += "-changed"
		}
		obj("Target", fmt.Sprintf("target-%d", t), fmt.Sprintf(`  labels: {group: g%d, env: prod}
spec:
  renderRegistryRef: {name: render}
  userdata: {site: %s}
`, t%2, site))
	}
	for r := range 2 {
		obj("ReleaseBinding", fmt.Sprintf("binding-%d", r), fmt.Sprintf("spec:\n  targetRef: {name: target-%d}\n  releaseRef: {name: release-%d}\n", r, 4-r))
	}
	obj("RegistryBinding", "pull", "spec:\n  targetRef: {name: target-0}\n  registryRef: {name: render}\n")
	return b.String()
}
