// Package archive carries a solar layout across an air gap as one file: Export
// writes the newest version of every repository of a layout (what solar push
// pushes) with its signatures as one OCI image-layout archive, and Unpack
// reads such an archive back, every byte and every reference checked before
// anything is pushed, into a private temporary folder that holds each blob
// once by its digest (however many versions name it: what is unpacked is
// never more than the archive), a read-only store that publish.PushLayout
// pushes as it pushes a rendered layout. What a run killed with SIGKILL leaves (that folder, or
// export's temporary file before its rename) the next run removes.
//
// The archive is a tar (ustar) of a standard OCI image layout, what oras and
// skopeo call an OCI archive, in this order:
//
//	oci-layout            {"imageLayoutVersion":"1.0.0"}
//	index.json            one entry per version, annotated
//	                      org.opencontainers.image.ref.name=<repository>:<version>,
//	                      and its signatures untagged, with their artifactType
//	solar-export.json     the versions: repository, version, manifest digest
//	                      and signature digests (Manifest)
//	blobs/, blobs/sha256/ folders
//	blobs/sha256/<hex>    every blob once (shared ones too), by digest
//
// The same layout gives the same bytes: entries in that order, blobs sorted,
// index.json sorted by ref name then digest, mtime the Unix epoch, uid and
// gid 0, no user or group names, files 0600 and folders 0700 (the charts
// hold agent tokens).
package archive

import (
	"github.com/opencontainers/go-digest"
)

// Names in the archive besides the blobs.
const (
	ExportFile = "solar-export.json"
	// Format is the version of solar-export.json.
	Format = "solar-export/v1"
)

// Manifest is solar-export.json: what the archive holds.
type Manifest struct {
	Format   string    `json:"format"`
	Versions []Version `json:"versions"`
	// Dependencies are the application charts and images carried
	// (FormatDependencies only).
	Dependencies []Dependency `json:"dependencies,omitempty"`
}

// Version is one version of a repository in an archive.
type Version struct {
	Repository string `json:"repository"`
	Version    string `json:"version"`
	// Manifest is the digest of the version's manifest.
	Manifest digest.Digest `json:"manifest"`
	// Signatures are the digests of the manifests that attach its
	// signatures (cosign bundles), sorted; empty when it is unsigned.
	Signatures []digest.Digest `json:"signatures"`
}

// Summary says what an archive written holds.
type Summary struct {
	Versions     []Version    `json:"versions"`
	Dependencies []Dependency `json:"dependencies,omitempty"`
	// Blobs counts the blobs, manifests included, each once.
	Blobs int `json:"blobs"`
	// LeftOut are what an export relative to the other side's state
	// (Options.Have) did not carry: the versions (REPOSITORY:VERSION) and
	// dependencies (their references) whose manifest it holds.
	LeftOut []string `json:"leftOut,omitempty"`
	// Size and SHA256 are the archive file's: compare them across the gap.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Limits bound what Unpack reads: an archive beyond them is refused.
type Limits struct {
	Entries int   // entries in the tar, and versions in solar-export.json
	Blob    int64 // bytes of one blob
	// Total bounds the bytes of all blobs together (what is unpacked), and
	// the bytes the versions push (a blob shared by many repositories
	// once per repository).
	Total    int64
	Metadata int64 // bytes of oci-layout, index.json or solar-export.json
}

// DefaultLimits are what solar push reads: ten thousand charts with their
// signatures fit many times over.
var DefaultLimits = Limits{Entries: 200_000, Blob: 256 << 20, Total: 8 << 30, Metadata: 64 << 20}

// maxManifest bounds a manifest read from an archive or a layout.
const maxManifest = 4 << 20

// Tar entry modes and time.
const (
	fileMode = 0o600
	dirMode  = 0o700
)
