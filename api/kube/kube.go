// Package kube is the Kubernetes form of the api vocabulary: the group
// version, and a kind's GroupVersionKind and GroupVersionResource, for
// client-go's dynamic client and controller-runtime.
package kube

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/solar-pipeline/solar/api"
)

// GroupVersion is the SolAr API's group and version.
var GroupVersion = schema.GroupVersion{Group: api.Group, Version: api.Version}

// GVK is kind's GroupVersionKind.
func GVK(kind string) schema.GroupVersionKind { return GroupVersion.WithKind(kind) }

// GVR is kind's GroupVersionResource.
func GVR(kind string) schema.GroupVersionResource {
	return GroupVersion.WithResource(api.Plural(kind))
}

// The resources the agent and the credential minter write.
var (
	TargetGVR       = GVR(api.KindTarget)
	TargetReportGVR = GVR(api.KindTargetReport)
)
