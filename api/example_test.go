package api_test

import (
	"fmt"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
)

// The vocabulary in use: an object's apiVersion, a kind's resource, and the
// GroupVersionResource a dynamic client lists it with.
func Example() {
	fmt.Println(api.APIVersion)
	fmt.Println(api.Plural(api.KindRegistry))
	fmt.Println(kube.GVR(api.KindTargetReport))
	// Output:
	// solar.opendefense.cloud/v1alpha1
	// registries
	// solar.opendefense.cloud/v1alpha1, Resource=targetreports
}
