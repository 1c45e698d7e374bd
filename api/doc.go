// Package api is the vocabulary of the SolAr API as Solar speaks it, in one
// place, as fluxcd's api/v1 (groupversion_info.go, condition_types.go) and
// pkg/oci (constants.go) keep theirs: the API group and version, the kinds
// and which of them the controller watches, the annotations and labels Solar
// reads and writes, the condition types and reasons it writes, and the media
// and artifact types of what it publishes. Every other package uses these
// names and none declares them again. It imports nothing, so that the device
// side (the root updater) may use it too; the Kubernetes forms
// (GroupVersionResources) are in api/kube.
//
// Adding a kind:
//  1. its constant here (groupversion.go), in Kinds, and in ControllerKinds
//     if solar controller renders it;
//  2. its CUE schema in schemas/ and, if the pipeline reads it, its Go type
//     in renderer/model (and model.Set);
//  3. make crds (config/crd, from the schemas) and, for the controller, its
//     resource in charts/solar-controller's ClusterRole (make manifests);
//  4. a file of testdata/ or examples/ that holds one, so the vet corpus and
//     the docs see it.
package api
