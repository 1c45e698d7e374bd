// Package chart renders and packages solar's Helm charts: a release chart per
// Release (a Flux OCIRepository and HelmRelease for its source chart) and a
// bootstrap chart per Target (an OCIRepository and HelmRelease per release
// chart, app of apps).
//
// It takes resolved releases and Targets (renderer/resolve) and returns a
// Source: the chart without its version. Source.Package(version) returns the
// byte-reproducible .tgz and the OCI config of that version; the same source and
// version give the same bytes on any machine, in any time zone and directory.
//
//	src := chart.Release(sel, chart.AppOptions{})
//	pkg, err := src.Package("0.0.1", chart.Options{})
//	fmt.Println(pkg.Layer.Digest)
package chart
