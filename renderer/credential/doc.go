// Package credential mints each Target's agent credential with client-go
// against the SolAr API server: a ServiceAccount solar-agent-<target>, a Role
// that can only read its own Target and read and update its own TargetReport, a
// RoleBinding, an empty TargetReport, and a token from the TokenRequest API
// bound to a Secret that holds it (deleting the Secret invalidates the token).
//
// It takes a Target and returns a Credential: the AgentCredentialReady
// condition (Issued, Disabled, Revoked, MintFailed), written to the Target's
// status when the Target exists in the API server, and, when issued, the
// kubeconfig the Target's agent release carries. Tokens are rotated when less
// than a third of their lifetime is left (the old one stays valid until it
// expires) and revoked by the Target annotation
// solar.opendefense.cloud/agent-credential: revoked. Tokens never appear in
// messages: only a short fingerprint does.
//
// A sync reads what it checks from the API server, or, with Options.Cache
// (solar controller's), from informers per namespace it mints in, and
// writes only what changed: an unchanged Target then costs no request.
//
//	m, err := credential.NewMinter(restConfig, credential.Options{APIServerURL: url, TTL: 24 * time.Hour})
//	cred := m.Sync(ctx, target)
//	fmt.Println(cred.Reason, cred.Message)
package credential
