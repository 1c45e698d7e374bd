// Package publish writes content-addressed artifacts into OCI repositories,
// each at the version its content needs. A Helm chart is one kind of job;
// it knows nothing of Targets or credentials.
//
// It takes Jobs (a repository and a function that packs the artifact at a
// version) and a store.Store (an OCI image layout on disk, or a remote
// registry: renderer/store) and returns a Result per job: version, manifest
// digest and action (create, update, unchanged). The store is the only state:
// an artifact whose layers equal the latest version's is unchanged and nothing
// is written for it; otherwise the next patch version is. A blob already in a
// repository is never uploaded again. After pushing, Publish confirms that the
// tags it pushed still hold its manifests, and publishes again at the next
// version what another writer overwrote.
//
// That is the versioned push. The other push is Put, for tags bound once
// (an agent version, a device's attempt, a version PushLayout copies from a
// layout): the same content changes nothing, other content is refused with
// ErrImmutable.
//
// It also owns the namespace index (Index, ReadIndex, UpdateIndex: one
// signed artifact per namespace naming its repositories' latest versions),
// which it tells a layout to save after the repositories it names
// (store.LastSaver), and the rule a garbage collection keeps the indexes by
// (GCIndexes, for store.GCOptions.Own).
//
// It does not own the store: layouts, registries, credentials, locks,
// garbage collection and repair are renderer/store's.
package publish
