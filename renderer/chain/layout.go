package chain

import (
	"fmt"
	"path"
	"strings"
)

// bootstrapPrefix starts the name of every bootstrap chart.
const bootstrapPrefix = "bootstrap-"

// BootstrapChart is the name of a Target's bootstrap chart.
func BootstrapChart(target string) string { return bootstrapPrefix + target }

// Repository names inside a registry: where the charts of a Target live.
func BootstrapRepository(targetNS, target string) string {
	return targetNS + "/" + BootstrapChart(target)
}

// BootstrapTarget is the Target whose bootstrap chart repository is, if it
// is one.
func BootstrapTarget(repository string) (targetNS, target string, ok bool) {
	ns, name, ok := strings.Cut(repository, "/")
	target, isBootstrap := strings.CutPrefix(name, bootstrapPrefix)
	if !ok || ns == "" || strings.Contains(name, "/") || !isBootstrap {
		return "", "", false
	}
	return ns, target, true
}

// Namespace is the Target namespace whose charts repository holds: its
// first component.
func Namespace(repository string) string {
	ns, _, _ := strings.Cut(repository, "/")
	return ns
}

// rolloutPrefix starts the name of every rollout state's repository.
const rolloutPrefix = "solar-rollout-"

// RolloutRepository is where the state of Rollout name of namespace ns
// lives: beside the namespace's charts, not one of them.
func RolloutRepository(ns, name string) string { return ns + "/" + rolloutPrefix + name }

// IsRolloutRepository says whether a repository holds a rollout's state.
func IsRolloutRepository(repository string) bool {
	ns, name, ok := strings.Cut(repository, "/")
	return ok && ns != "" && !strings.Contains(name, "/") && strings.HasPrefix(name, rolloutPrefix)
}

// ReleaseRepository is where a release chart for the Targets of targetNS lives.
// The Target namespace comes first so that one namespace's charts never share a
// repository with another's: a CI job per namespace writes only its own.
func ReleaseRepository(targetNS, releaseNS, release string) string {
	return targetNS + "/" + releaseNS + "/release-" + release
}

// AgentRepository is where the agent release chart of one Target lives: it
// carries that Target's kubeconfig, so it is never shared.
func AgentRepository(targetNS, target, releaseNS, release string) string {
	return targetNS + "/" + releaseNS + "/" + target + "/release-" + release
}

// IsChartRepository says whether a repository name (under the registry's
// prefix) has the shape of one of the three above. Other repositories under
// the prefix, such as the fleet's agent binaries and attempts, are not solar's
// charts: verify and gc leave them as they are.
func IsChartRepository(repository string) bool {
	parts := strings.Split(repository, "/")
	last := parts[len(parts)-1]
	switch len(parts) {
	case 2:
		return strings.HasPrefix(last, bootstrapPrefix)
	case 3, 4:
		return strings.HasPrefix(last, "release-")
	}
	return false
}

// IsBootstrapRepository says whether a repository name (under the registry's
// prefix) is a Target's bootstrap chart: the charts that name others.
func IsBootstrapRepository(repository string) bool {
	_, _, ok := BootstrapTarget(repository)
	return ok
}

// URL is the oci:// URL of a repository in a registry given as HOST[:PORT][/PREFIX].
func URL(registry, repository string) string {
	return "oci://" + strings.TrimSuffix(registry, "/") + "/" + repository
}

// Limits of what repository and chart names become.
const (
	// MaxRepository is the longest repository name, prefix included, that
	// registries take.
	MaxRepository = 255
	// MaxChartName keeps <chart>-<version>.tgz, the file helm pull writes,
	// within a file name's 255 bytes.
	MaxChartName = 240
)

// CheckRepository says why a repository under the registry's prefix, or the
// name of its chart (its last component), would be too long.
func CheckRepository(prefix, repository string) error {
	full := path.Join(prefix, repository)
	if len(full) > MaxRepository {
		return fmt.Errorf("the repository %s would have %d characters, more than the %d registries take", full, len(full), MaxRepository)
	}
	if chart := path.Base(repository); len(chart) > MaxChartName {
		return fmt.Errorf("the chart %s would have a name of %d characters, more than %d (helm pull writes <chart>-<version>.tgz)", chart, len(chart), MaxChartName)
	}
	return nil
}
