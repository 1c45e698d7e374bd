// Package imagebuild builds Solar's own container images from its Go main
// packages, without Docker, a daemon or a base image: it takes a main package
// and the metadata of the build (version, revision, source, created time) and
// returns one OCI image index with an image per platform, each a static binary
// at /usr/local/bin/NAME on an empty base plus a CA bundle and a passwd entry
// for the non-root user 65532, and a CycloneDX SBOM of each binary from its
// Go build information.
//
// The same source built twice gives the same index digest, whatever the
// checkout's path, the time zone or the build machine (with the same Go
// toolchain): binaries are built with -trimpath, without VCS stamping or build
// id, and every tar entry, time and annotation is fixed.
//
//	res, err := imagebuild.Build(ctx, imagebuild.Options{
//		Dir: ".", Package: "./cmd/solar-agent", Name: "solar-agent",
//		Version: "0.4.0", Revision: commit, Source: "https://github.com/solar-pipeline/solar",
//	})
//	digest, _ := res.Index.Digest()
package imagebuild
