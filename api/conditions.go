package api

// The condition a Target's status carries for its agent's credential, and
// its reasons (renderer/credential writes them).
const (
	ConditionAgentCredentialReady = "AgentCredentialReady"

	ReasonIssued     = "Issued"
	ReasonDisabled   = "Disabled"
	ReasonRevoked    = "Revoked"
	ReasonMintFailed = "MintFailed"
	// ReasonPending is only ever in a dry run's plan: a new token would be
	// minted.
	ReasonPending = "Pending"
)

// Reasons of the Ready condition solar controller writes besides Flux's own
// (Succeeded, ProgressingWithRetry).
const (
	ReasonInvalidInput  = "InvalidInput"
	ReasonPublishFailed = "PublishFailed"
	// ReasonRolloutHeld: a Rollout holds the Target's new bootstrap chart
	// back until its wave starts.
	ReasonRolloutHeld = "RolloutHeld"
)
