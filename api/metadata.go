package api

// Annotations and labels on SolAr objects and on what Solar renders.
const (
	// AnnotationTargetCredential marks the agent Release ("true"): every
	// Target bound to it gets an agent credential.
	AnnotationTargetCredential = Group + "/target-credential"
	// AnnotationAgentCredential on a Target: "revoked" revokes its
	// credential.
	AnnotationAgentCredential = Group + "/agent-credential"
	// LabelTarget and LabelRelease are on what a Target's charts install
	// (the agent reads them); AnnotationRelease names the release.
	LabelTarget       = Group + "/target"
	LabelRelease      = Group + "/release"
	AnnotationRelease = Group + "/release"
	// AnnotationTarget names the Target ("<namespace>/<name>") on a
	// bootstrap chart.
	AnnotationTarget = Group + "/target"
	// AnnotationAgentVersion and AnnotationAgentHost are on a TargetReport:
	// the agent that wrote it, and where it runs.
	AnnotationAgentVersion = Group + "/agent-version"
	AnnotationAgentHost    = Group + "/agent-host"
	// AnnotationReportSite and AnnotationReportExportedAt are on a
	// TargetReport imported from a site's report archive (solar
	// import-reports): the site, and when the archive left it (RFC 3339).
	AnnotationReportSite       = Group + "/reported-via-site"
	AnnotationReportExportedAt = Group + "/exported-at"
	// LabelAgentTokenFor and AnnotationTokenExpires are on an agent's token
	// Secrets: whose token, and when it expires.
	LabelAgentTokenFor     = Group + "/agent-token-for"
	AnnotationTokenExpires = Group + "/token-expires"
	// AnnotationDeviceID is on a fleet attempt: the device it is for.
	AnnotationDeviceID = Group + "/device-id"
)

// Annotations of a signature: where the signed chart is published, in the
// signed statement (cosign sign -a puts its annotations there); and the
// sigstore bundle's own, as cosign v3 writes them.
const (
	AnnotationSignedRepository = Group + "/repository"
	AnnotationSignedVersion    = Group + "/version"
	AnnotationBundleContent    = "dev.sigstore.bundle.content"
	AnnotationBundlePredicate  = "dev.sigstore.bundle.predicateType"
)
