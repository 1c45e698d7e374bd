package testenv

import (
	"fmt"
	"strings"
)

// RolloutInput is the input of the rollout tests: 12 Targets of alpha
// (t01…t12), one Release web at replicas replicas that all of them get and,
// when policy is not empty, that Rollout (YAML) after them.
func RolloutInput(replicas int, policy string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: solar.opendefense.cloud/v1alpha1
kind: Registry
metadata: {name: render, namespace: alpha}
spec: {hostname: registry.example.com, targetPullSecretName: pull}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Release
metadata: {name: web, namespace: alpha}
spec:
  chart: {repository: registry.example.com/charts/web, tag: 1.0.0}
  targetNamespace: web
  values: {replicaCount: %d}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Profile
metadata: {name: web, namespace: alpha}
spec: {releaseRef: {name: web}, targetSelector: {}}
`, replicas)
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata: {name: t%02d, namespace: alpha}\nspec: {renderRegistryRef: {name: render}}\n", i)
	}
	if policy != "" {
		b.WriteString("---\n" + policy)
	}
	return b.String()
}

// ThreeWaves is Rollout alpha/web of one canary, a third of the rest and
// the rest, each wave's progressDeadline deadline, failing by onFailure.
func ThreeWaves(deadline, onFailure string) string {
	return fmt.Sprintf(`apiVersion: solar.opendefense.cloud/v1alpha1
kind: Rollout
metadata: {name: web, namespace: alpha}
spec:
  waves:
    - {name: canary, count: 1, progressDeadline: %[1]s}
    - {name: third, percent: 34, progressDeadline: %[1]s}
    - {name: rest, progressDeadline: %[1]s}
  onFailure: %[2]s
`, deadline, onFailure)
}
