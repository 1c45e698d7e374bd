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
