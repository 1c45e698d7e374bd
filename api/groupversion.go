package api

import "strings"

// The API group and version of every SolAr kind.
const (
	Group      = "solar.opendefense.cloud"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version
)

// The SolAr kinds, and the fleet's.
const (
	KindTarget           = "Target"
	KindProfile          = "Profile"
	KindRelease          = "Release"
	KindComponent        = "Component"
	KindComponentVersion = "ComponentVersion"
	KindRegistry         = "Registry"
	KindReleaseBinding   = "ReleaseBinding"
	KindRegistryBinding  = "RegistryBinding"
	KindReferenceGrant   = "ReferenceGrant"
	KindTargetReport     = "TargetReport"
	KindPipelineConfig   = "PipelineConfig"
	KindDevice           = "Device"
	KindDeviceUpgrade    = "DeviceUpgrade"
	KindRollout          = "Rollout"
)

// Kinds are the kinds solar reads.
var Kinds = []string{KindTarget, KindProfile, KindRelease, KindComponent, KindComponentVersion, KindRegistry,
	KindReleaseBinding, KindRegistryBinding, KindReferenceGrant, KindTargetReport, KindPipelineConfig,
	KindDevice, KindDeviceUpgrade, KindRollout}

// ControllerKinds are the kinds solar controller watches: every input of a
// render, and the Rollouts that gate what a render publishes. A
// TargetReport is the agents' output and Device and DeviceUpgrade are the
// fleet's (solar fleet apply, or the controller's fleet pass when it has
// NATS), so none of them re-plans a namespace.
var ControllerKinds = []string{KindTarget, KindProfile, KindRelease, KindComponent, KindComponentVersion,
	KindRegistry, KindReleaseBinding, KindRegistryBinding, KindReferenceGrant, KindPipelineConfig, KindRollout}

// Plural is the resource name of kind, as its CRD names it: "targets",
// "registries".
func Plural(kind string) string {
	k := strings.ToLower(kind)
	if strings.HasSuffix(k, "y") {
		return strings.TrimSuffix(k, "y") + "ies"
	}
	return k + "s"
}

// DeviceRolloutPrefix starts the name under which a DeviceUpgrade's
// rollout keeps its state (deviceupgrade-NAME, beside the Rollouts of its
// namespace): a Rollout may not take such a name.
const DeviceRolloutPrefix = "deviceupgrade-"

// IsDeviceRollout says whether name is that of a DeviceUpgrade's rollout.
func IsDeviceRollout(name string) bool { return strings.HasPrefix(name, DeviceRolloutPrefix) }
