package model

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Meta is the part of ObjectMeta solar reads.
type Meta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// LocalRef names an object in the referring object's namespace.
type LocalRef struct {
	Name string `json:"name"`
}

// Ref names an object; an empty Namespace means the referring object's namespace.
type Ref struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Target is a cluster or device solar renders a bootstrap chart for.
type Target struct {
	Meta `json:"metadata"`
	Spec struct {
		RenderRegistryRef Ref            `json:"renderRegistryRef"`
		Userdata          map[string]any `json:"userdata,omitempty"`
	} `json:"spec"`
}

// Profile binds its Release to the Targets its selector matches: of its
// namespace, and of those whose grants let it in (Set.ProfileGranted).
type Profile struct {
	Meta `json:"metadata"`
	Spec struct {
		ReleaseRef     LocalRef              `json:"releaseRef"`
		TargetSelector *metav1.LabelSelector `json:"targetSelector,omitempty"`
		Userdata       map[string]any        `json:"userdata,omitempty"`
	} `json:"spec"`
}

// Release is one deployable chart.
type Release struct {
	Meta `json:"metadata"`
	Spec struct {
		ComponentVersionRef *Ref                  `json:"componentVersionRef,omitempty"`
		Chart               *InlineChart          `json:"chart,omitempty"`
		TargetNamespace     string                `json:"targetNamespace,omitempty"`
		UniqueName          string                `json:"uniqueName,omitempty"`
		Priority            int32                 `json:"priority,omitempty"`
		AntiAffinity        *metav1.LabelSelector `json:"antiAffinity,omitempty"`
		Values              map[string]any        `json:"values,omitempty"`
		// Dependencies are the releases of the same Target this one is
		// installed after, by uniqueName.
		Dependencies []Dependency `json:"dependencies,omitempty"`
	} `json:"spec"`
}

// Dependency names a release a Release is installed after: the one of the
// Target with this uniqueName.
type Dependency struct {
	UniqueName string `json:"uniqueName"`
}

// ComponentDependency is a ComponentVersion's dependency, with the fields of
// SolAr's ADR-011 (component dependencies, draft): solar orders a release of
// the ComponentVersion after the Target's release whose uniqueName is
// ComponentRef's name (a release's default uniqueName is its component's
// name). ComponentVersionRef, Version and ClusterWide are SolAr's (its lock
// resolver's and its catalog's); solar reads them as data only.
type ComponentDependency struct {
	ComponentRef        LocalRef  `json:"componentRef"`
	ComponentVersionRef *LocalRef `json:"componentVersionRef,omitempty"`
	Version             string    `json:"version,omitempty"`
	ClusterWide         bool      `json:"clusterWide,omitempty"`
}

// InlineChart is a chart in an OCI repository, pinned by Tag or Digest.
type InlineChart struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag,omitempty"`
	Digest     string `json:"digest,omitempty"`
}

// Component is a deployable software component.
type Component struct {
	Meta `json:"metadata"`
}

// ComponentVersion is one version of a Component.
type ComponentVersion struct {
	Meta `json:"metadata"`
	Spec struct {
		ComponentRef LocalRef            `json:"componentRef"`
		Tag          string              `json:"tag"`
		Resources    map[string]Resource `json:"resources"`
		Entrypoint   struct {
			ResourceName string `json:"resourceName"`
			Type         string `json:"type"`
		} `json:"entrypoint"`
		// Dependencies order every release of this version after the
		// Target's releases of the components they name.
		Dependencies []ComponentDependency `json:"dependencies,omitempty"`
	} `json:"spec"`
}

// Resource is one artifact of a ComponentVersion.
type Resource struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Insecure   bool   `json:"insecure,omitempty"`
	Helm       *struct {
		Name           string `json:"name"`
		Version        string `json:"version"`
		AppVersion     string `json:"appVersion,omitempty"`
		ValuesTemplate string `json:"valuesTemplate,omitempty"`
	} `json:"helm,omitempty"`
}

// Registry is an OCI registry.
type Registry struct {
	Meta `json:"metadata"`
	Spec struct {
		Hostname             string    `json:"hostname"`
		PlainHTTP            bool      `json:"plainHTTP,omitempty"`
		SolarSecretRef       *LocalRef `json:"solarSecretRef,omitempty"`
		TargetPullSecretName string    `json:"targetPullSecretName,omitempty"`
	} `json:"spec"`
}

// ReleaseBinding binds a Release of its namespace to a Target.
type ReleaseBinding struct {
	Meta `json:"metadata"`
	Spec struct {
		TargetRef  Ref      `json:"targetRef"`
		ReleaseRef LocalRef `json:"releaseRef"`
	} `json:"spec"`
}

// RegistryBinding gives a Target a Registry's pull secret.
type RegistryBinding struct {
	Meta `json:"metadata"`
	Spec struct {
		TargetRef   Ref `json:"targetRef"`
		RegistryRef Ref `json:"registryRef"`
	} `json:"spec"`
}

// ReferenceGrant allows references into its namespace.
type ReferenceGrant struct {
	Meta `json:"metadata"`
	Spec struct {
		From []GrantFrom `json:"from"`
		To   []GrantTo   `json:"to"`
	} `json:"spec"`
}

// GrantFrom is a kind and namespace a ReferenceGrant allows references from.
type GrantFrom struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
}

// GrantTo is a kind (and optionally one name) a ReferenceGrant allows references to.
type GrantTo struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name,omitempty"`
}

// PipelineConfig holds the operator's settings.
type PipelineConfig struct {
	Meta `json:"metadata"`
	Spec struct {
		Agent struct {
			APIServerURL string `json:"apiserverURL,omitempty"`
			TokenTTL     string `json:"tokenTTL,omitempty"`
			// Image is the agent image by digest; see chart.AppOptions.AgentImage.
			Image string `json:"image,omitempty"`
		} `json:"agent"`
		// Flux is the policy of the application HelmReleases; see chart.AppOptions.
		Flux struct {
			Timeout string `json:"timeout,omitempty"`
			// Retries is nil when unset (a default applies), 0 when set to 0.
			Retries *int `json:"retries,omitempty"`
		} `json:"flux"`
		Registries struct {
			AllowedHostnames []string `json:"allowedHostnames,omitempty"`
			AllowInsecure    bool     `json:"allowInsecure,omitempty"`
			// Mirror, when set, is the site registry every application
			// chart is relocated into (solar push): the Targets pull them
			// from there.
			Mirror *Mirror `json:"mirror,omitempty"`
		} `json:"registries"`
	} `json:"spec"`
}

// Mirror is where a site holds the application charts and images of other
// registries: under RegistryRef's hostname, at Path (DefaultMirrorPath when
// empty), as package mirror relocates them.
type Mirror struct {
	RegistryRef Ref    `json:"registryRef"`
	Path        string `json:"path,omitempty"`
}

// DefaultMirrorPath is a Mirror's path when it sets none.
const DefaultMirrorPath = "mirror"

// Device is a device that runs the fleet agent.
type Device struct {
	Meta `json:"metadata"`
	Spec struct {
		DeviceID string `json:"deviceId"`
		Platform string `json:"platform"`
	} `json:"spec"`
}

// DeviceUpgrade asks for the agent of some devices to be replaced.
type DeviceUpgrade struct {
	Meta `json:"metadata"`
	Spec struct {
		AgentVersion    string                `json:"agentVersion"`
		Artifact        string                `json:"artifact"`
		PreviousVersion string                `json:"previousVersion,omitempty"`
		NotAfter        string                `json:"notAfter,omitempty"`
		DeviceIDs       []string              `json:"deviceIds,omitempty"`
		DeviceSelector  *metav1.LabelSelector `json:"deviceSelector,omitempty"`
		// Rollout, when set, admits the devices in waves.
		Rollout *DeviceRollout `json:"rollout,omitempty"`
		// UpdateWindows, when set, say when each group of devices may start
		// its attempt: a device takes the first whose Selector matches it;
		// one that none matches has no window.
		UpdateWindows []UpdateWindow `json:"updateWindows,omitempty"`
	} `json:"spec"`
}

// UpdateWindow is a recurring time in which the devices Selector matches
// (nil: every device) may start their attempt: a RolloutWindow's schedule,
// duration and time zone.
type UpdateWindow struct {
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	RolloutWindow
}

// DeviceRollout is a DeviceUpgrade's rollout policy: a Rollout's waves and
// windows over its devices (a wave's selector matches Device labels); a
// failed wave halts the upgrade (each device rolls back on its own).
type DeviceRollout struct {
	Waves   []RolloutWave   `json:"waves"`
	Windows []RolloutWindow `json:"windows,omitempty"`
}

// Rollout is the policy of a progressive rollout of the Targets of its
// namespace. Durations are Go durations as written (the schema checked their
// syntax); optional numbers are nil when unset, so that a default differs
// from an explicit 0.
type Rollout struct {
	Meta `json:"metadata"`
	Spec struct {
		// Selector chooses the Targets it governs; nil: every Target of the
		// namespace.
		Selector  *metav1.LabelSelector `json:"selector,omitempty"`
		Waves     []RolloutWave         `json:"waves"`
		Windows   []RolloutWindow       `json:"windows,omitempty"`
		OnFailure string                `json:"onFailure,omitempty"` // Halt (when empty) or Rollback
	} `json:"spec"`
}

// RolloutWave is one step of a Rollout: the Targets left that Selector
// matches, Count of them or Percent of them, at most one of the three; none
// (the last wave only): every Target left.
type RolloutWave struct {
	Name     string                `json:"name"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	Count    *int                  `json:"count,omitempty"`
	Percent  *int                  `json:"percent,omitempty"`
	// ProgressDeadline is how long the wave's Targets have to report Ready
	// (default 10m).
	ProgressDeadline string `json:"progressDeadline,omitempty"`
	// SuccessThreshold is the percentage of the wave's Targets that must
	// report Ready (default 100); ErrorThreshold that which may fail
	// (default 0).
	SuccessThreshold *int `json:"successThreshold,omitempty"`
	ErrorThreshold   *int `json:"errorThreshold,omitempty"`
	// Pause is how long to wait after the wave passed; Approval waits for
	// solar rollout approve.
	Pause    string `json:"pause,omitempty"`
	Approval bool   `json:"approval,omitempty"`
}

// RolloutWindow is a recurring time in which a new wave may start: from each
// time the 5-field cron Schedule names in TimeZone (an IANA name, default
// UTC), for Duration.
type RolloutWindow struct {
	Schedule string `json:"schedule"`
	Duration string `json:"duration"`
	TimeZone string `json:"timeZone,omitempty"`
}
