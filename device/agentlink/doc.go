// Package agentlink is the device agent's side of the fleet upgrade, for
// agent authors to embed (docs/updater.md).
//
// Connect takes the fleet's NATS servers, the device id and the file of the
// device's bearer JWT, and returns the device's NATS connection: the token
// read again at every connect and reconnect, every reply and watch delivery
// under the device's own inbox prefix (wire.InboxPrefix), reconnected without
// end.
//
// A Link takes that connection's JetStream context, the bucket, the device
// id, the updater's socket, this binary's version and the agent's own
// readiness checks. Link.Run watches attempt.<deviceId>, forwards each new
// attempt to the root updater over its Unix socket, publishes the outcomes
// the updater reports into state.<deviceId>, and reports the agent ready
// (Link.Ready, e.g. updater.MarkReady) once, when strict readiness holds:
// local dependencies, NATS, the complete desired-state snapshot, the
// activation target-version check, transaction recovery and the startup
// publication (ready.go). The updater commits a new agent only on that
// report, and rolls back to the previous one without it. The updater itself
// has no NATS connection.
package agentlink
