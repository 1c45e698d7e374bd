// Package policies embeds solar's own CUE policies and the contract every policy,
// solar's or a user's, is evaluated with (contract.cue).
package policies

import "embed"

// FS holds the policy files, *.cue at its root.
//
//go:embed *.cue
var FS embed.FS

// Contract is the file that declares input, #Finding, deny and warn. solar adds
// it to every policy directory it evaluates.
const Contract = "contract.cue"
