// Package status compares what solar published for a Target (the newest
// bootstrap chart in a store, the release chart versions and manifest
// digests it names) with what the Target's agent reported in its
// TargetReport, and says per Target whether it converged: solar status.
package status
