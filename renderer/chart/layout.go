package chart

import "strings"

// Repository names inside a registry: where the charts of a Target live.
func BootstrapRepository(targetNS, target string) string {
	return targetNS + "/bootstrap-" + target
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

// URL is the oci:// URL of a repository in a registry given as HOST[:PORT][/PREFIX].
func URL(registry, repository string) string {
	return "oci://" + strings.TrimSuffix(registry, "/") + "/" + repository
}
