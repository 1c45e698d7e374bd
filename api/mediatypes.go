package api

// Media and artifact types of what Solar publishes and reads.
const (
	// A Helm chart in OCI, as helm push writes it.
	MediaTypeHelmConfig = "application/vnd.cncf.helm.config.v1+json"
	MediaTypeHelmChart  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// A namespace's index of published charts: its manifest's artifact type
	// and its one layer's media type.
	ArtifactTypeIndex = "application/vnd.solar.index.v1"
	MediaTypeIndex    = "application/vnd.solar.index.v1+json"
	// A rollout's state (renderer/rollout), one JSON document per version.
	ArtifactTypeRollout = "application/vnd.solar.rollout.v1"
	MediaTypeRollout    = "application/vnd.solar.rollout.v1+json"
	// A site's TargetReports carried out of an air gap (renderer/
	// sitereport): the artifact type, its config (the site and when the
	// reports left it) and each report's layer.
	ArtifactTypeSiteReports    = "application/vnd.solar.site-reports.v1"
	MediaTypeSiteReportsConfig = "application/vnd.solar.site-reports.config.v1+json"
	MediaTypeTargetReport      = "application/vnd.solar.targetreport.v1+json"
	// A report archive's device states and its site registry's tags
	// (pushed), each a layer of a JSON array.
	MediaTypeSiteDevices = "application/vnd.solar.site-devices.v1+json"
	MediaTypeSitePushed  = "application/vnd.solar.site-pushed.v1+json"
	// MediaTypeSigstoreBundle is a signature: cosign v3's bundle, the layer
	// and artifact type of its referrer.
	MediaTypeSigstoreBundle = MediaTypeSigstoreBundlePrefix + ".v0.3+json"
	// MediaTypeSigstoreBundlePrefix is every bundle version's media type's
	// beginning.
	MediaTypeSigstoreBundlePrefix = "application/vnd.dev.sigstore.bundle"
	// MediaTypeInTotoPayload is the payload type of the bundle's envelope.
	MediaTypeInTotoPayload = "application/vnd.in-toto+json"
	// MediaTypeOCIArtifactManifest is the OCI artifact manifest of the
	// image-spec's 1.1 release candidates, withdrawn since: oras-go still
	// sends it to /manifests/ (its default ManifestMediaTypes).
	MediaTypeOCIArtifactManifest = "application/vnd.oci.artifact.manifest.v1+json"
	// MediaTypeSBOM is an image's SBOM referrer: CycloneDX JSON.
	MediaTypeSBOM = "application/vnd.cyclonedx+json"
	// The fleet: an index of agent binaries, one per platform, and a
	// device's attempt.
	ArtifactTypeAgent    = "application/vnd.solar.fleet.agent.v1"
	MediaTypeAgentBinary = "application/vnd.solar.fleet.agent.binary.v1"
	ArtifactTypeAttempt  = "application/vnd.solar.fleet.attempt.v1"
	MediaTypeAttempt     = "application/vnd.solar.fleet.attempt.v1+json"
	// OCI's own, for the device side, which links no OCI library.
	MediaTypeOCIManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeOCIEmpty    = "application/vnd.oci.empty.v1+json"
)
