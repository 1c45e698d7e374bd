package status

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/store"
)

// digestSuffix is the build metadata helm-controller appends to the version
// of a chart it loads from an OCIRepository: the first 12 hex digits of the
// artifact revision's digest, which for an OCIRepository is the manifest
// digest of the tag it pulled (mutateChartWithSourceRevision and
// extractDigestSubString in helm-controller's
// internal/controller/helmrelease_controller.go). The agent reports that
// version as it is, 0.0.1+68ee5879e98f.
var digestSuffix = regexp.MustCompile(`^[0-9a-f]{12}$`)

// runsPublished says whether reported, the version a cluster reports for a
// release, is the release chart published: rs.Desired and, when the report
// carries helm-controller's digest suffix and rs.DesiredDigest is known,
// the same manifest. It fills rs.ReportedDigest; why says, for the
// published version, why it is not the published artifact.
func runsPublished(rs *Release, reported string) (same bool, why string) {
	if reported == "" {
		return false, ""
	}
	v, err := semver.StrictNewVersion(reported)
	if err != nil {
		return false, fmt.Sprintf("reports %q, not a chart version", reported)
	}
	if d, err := semver.StrictNewVersion(rs.Desired); err != nil || !v.Equal(d) {
		return false, "" // another version: Flux is on its way
	}
	meta := v.Metadata()
	switch {
	case meta == "":
		return true, "" // not from an OCIRepository: the version is all there is
	case !digestSuffix.MatchString(meta):
		return false, fmt.Sprintf("runs %s with build metadata %q, not the 12 hex digits of an artifact digest helm-controller appends: which artifact it runs is unknown", reported, meta)
	}
	rs.ReportedDigest = meta
	want := digest.Digest(rs.DesiredDigest)
	if want.Validate() != nil || strings.HasPrefix(want.Encoded(), meta) {
		return true, "" // the published manifest unknown, or the one the cluster runs
	}
	return false, fmt.Sprintf("runs %s from artifact %s:%s…, published is %s:%s…: the version was re-tagged or rolled back; Flux pulls the published artifact at its next interval",
		rs.Desired, want.Algorithm(), meta, want.Algorithm(), want.Encoded()[:len(meta)])
}

// chartDigests finds the manifest digests of release chart versions in a
// store, once per oci:// URL and version (the Targets of a namespace share
// their release charts).
type chartDigests struct {
	store store.Store
	known map[published.Ref]string
}

// of is the manifest digest of the release chart version ref names, which
// the bootstrap chart of a Target of targetNS names: "" when the store does
// not have it.
func (c *chartDigests) of(ctx context.Context, targetNS string, ref published.Ref) (string, error) {
	key := published.Ref{URL: ref.URL, Version: ref.Version}
	if d, ok := c.known[key]; ok {
		return d, nil
	}
	_, desc, err := FindReleaseChart(ctx, c.store, targetNS, ref)
	if err != nil {
		return "", err
	}
	found := desc.Digest
	c.known[key] = string(found)
	return string(found), nil
}

// FindReleaseChart finds the release chart version ref names, which the
// bootstrap chart of a Target of targetNS names: its repository in st and
// its manifest ("" and no error when the store does not have it). The URL
// carries the registry and prefix the charts were rendered for: its
// suffixes are tried, longest first, until one resolves. Only the shape of
// a release chart repository of targetNS is asked for (with a registry
// prefix, the longer suffixes are not), and as a suffix the registry
// refuses (not only 404) may still be followed by the right one, an error
// counts only when none resolves.
func FindReleaseChart(ctx context.Context, st store.Store, targetNS string, ref published.Ref) (string, ocispec.Descriptor, error) {
	var repository string
	var found ocispec.Descriptor
	var failed error
	published.Repository(ref.URL, func(name string) bool {
		if !chain.IsChartRepository(name) || !strings.HasPrefix(name, targetNS+"/") {
			return false
		}
		repo, err := st.Repository(ctx, name)
		var desc ocispec.Descriptor
		if err == nil {
			desc, err = repo.Resolve(ctx, ref.Version)
		}
		if err != nil {
			if !store.IsNotFound(err) && failed == nil {
				failed = fmt.Errorf("reading %s:%s: %w", name, ref.Version, store.Explain(err))
			}
			return false
		}
		repository, found = name, desc
		return true
	})
	if repository == "" {
		return "", ocispec.Descriptor{}, failed
	}
	return repository, found, nil
}
