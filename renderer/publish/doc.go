// Package publish writes the charts of a resolved plan to OCI repositories:
// release charts first, then the bootstrap chart of every Target that names
// them, each at the version its content needs.
//
// It takes a resolve.Plan and a Store (an OCI image layout on disk, or a remote
// registry) and returns a Report: per Target the version, manifest digest and
// action (create, update, unchanged) of its bootstrap chart and release charts.
// The store is the only state: a chart whose layer equals the latest version's
// is unchanged and nothing is written for it; otherwise the next patch version
// is. A blob already in a repository is never uploaded again.
//
//	store, err := publish.OpenLayout(ctx, "out", false)
//	report, err := publish.Publish(ctx, store, plan, publish.Options{})
//	err = store.Save()
package publish
