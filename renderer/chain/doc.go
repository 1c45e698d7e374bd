// Package chain names every object the Flux chain creates on a Target's
// cluster, level by level, so that no object is owned by two levels:
//
//   - level 1, the bootstrap chart: installed once per cluster by the
//     first-contact HelmRelease Bootstrap (solar bootstrap-manifests) as the
//     Helm release Bootstrap in the Flux namespace. For every release of the
//     Target it holds an OCIRepository and a HelmRelease named Release.Source.
//   - level 2, the release charts: each installed by its level-1 HelmRelease as
//     the Helm release Release.Source in the Flux namespace. It holds an
//     OCIRepository and a HelmRelease named Release.App (and the ConfigMap
//     Release.Values when the ComponentVersion has a valuesTemplate).
//   - level 3, the application chart: installed by the level-2 HelmRelease as
//     the Helm release Release.AppRelease in Release.TargetNamespace (its Helm
//     storage stays in the Flux namespace).
//
// Names follow helm-controller's rules: a HelmRelease without releaseName
// installs the Helm release [<targetNamespace>-]<name>, shortened to 53
// characters (HelmReleaseName). For takes plain strings and returns plain
// strings; Objects and Collisions let resolve refuse a Target whose names
// would meet (only contrived names can).
//
//	r := chain.For("edge-1", "podinfo", "podinfo")
//	fmt.Println(r.Source, r.App, r.AppRelease)
//	// solar-bootstrap-podinfo edge-1-podinfo podinfo-edge-1-podinfo
package chain
