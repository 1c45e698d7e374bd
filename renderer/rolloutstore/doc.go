// Package rolloutstore keeps a Rollout's state in the store, beside the
// charts of its namespace (chain.RolloutRepository): one JSON document per
// version, written as a compare-and-set (publish.UpdateDocument), so that a
// pass killed at any instant and two passes at once admit nothing twice and
// nothing past the policy. solar publish and solar render write it on each
// pass; the operator's verbs (pause, resume, approve, abort, undo) set its
// flags, which the next pass obeys; solar rollout status reads it.
package rolloutstore
