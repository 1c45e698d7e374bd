// Package store is the OCI store solar writes its artifacts into and reads
// them from: a Store opens Repositories (an oras.Target that lists its tags)
// by name.
//
// It owns three stores and what keeps them sound:
//   - Layout: a folder of OCI image layouts on disk, one per repository
//     (out/<repository>/, tags are versions, as oras and go-containerregistry
//     read it), locked while open, each index.json written whole or not at all
//     and made durable by Save, in the order the repositories were first
//     tagged and those told to SaveLast (LastSaver) after all others;
//   - Remote: a registry through oras-go, with the docker and helm
//     credentials (Login, Logout), the retry policy, the referrers API probed
//     once, and errors explained in a sentence (Explain, ErrDenied, ...);
//   - Overlay: a registry read through a layout written into.
//
// Beside them: garbage collection (GC of a Layout and of a Remote: the
// versions beyond the newest kept, less those a kept version names), the
// repair of a layout's damaged blobs (Repairer), the signatures kept beside
// the versions as referrers, and the listing of repositories (Lister, Source).
//
// It does not own what goes into the store nor at which version: jobs,
// versions rising only with content, the namespace index and the pushes are
// the publish protocol (renderer/publish), which tells the store what it
// needs to know through protocol-neutral hooks: LastSaver for what a layout
// saves last, GCOptions.Own and GCOptions.Refs for what a collection keeps.
// It knows no chart, chain, resolution or pipeline.
package store
