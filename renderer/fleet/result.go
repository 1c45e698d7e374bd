package fleet

import "github.com/solar-pipeline/solar/renderer/publish"

// Result is what applying a planned attempt did for one device.
type Result struct {
	DeviceID      string `json:"deviceId"`
	Upgrade       string `json:"upgrade"`
	UUID          string `json:"uuid"`
	TargetVersion string `json:"targetVersion"`
	Platform      string `json:"platform"`
	// Digest is the digest of the attempt's OCI artifact.
	Digest string `json:"digest"`
	// Action is unchanged, create or update, or held when the upgrade's
	// rollout has not admitted the device (Reason says why); empty when
	// Error is set.
	Action string `json:"action,omitempty"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Failed reports whether a device of the results failed.
func Failed(results []Result) bool {
	for _, r := range results {
		if r.Error != "" {
			return true
		}
	}
	return false
}

// Changed reports whether a result writes (or, in a dry run, would write).
func Changed(results []Result) bool {
	for _, r := range results {
		if r.Action == publish.Create || r.Action == publish.Update {
			return true
		}
	}
	return false
}
