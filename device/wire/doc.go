// Package wire is what the fleet's two sides agree on, and all the device
// side links of it: the attempt (Attempt, held in attempt.<deviceId> as
// Current: the agent version to install, the binary's URL, digest, size and
// platform, the version it replaces, until when), the state a device reports
// (DeviceState, state.<deviceId>: where the updater's transaction is), the
// bucket's keys (AttemptKey, StateKey, UUIDKey, InboxPrefix), the version a
// binary reports of itself (BuildVersion), and the updater's socket as the
// agent speaks it (Send: one Request, then Outcomes in the states Phase* and
// State* until a Final one). solar fleet apply writes attempts; the updater
// and the fleet agent read them and write states; the auth callout gives
// each device its own keys only.
//
// An attempt is also an OCI artifact, as solar fleet apply pushes it: an image
// manifest (OCI 1.1, the empty config) whose single layer is the attempt's
// JSON (api.ArtifactTypeAttempt, api.MediaTypeAttempt). Its digest is a
// function of the attempt alone (created is the Unix epoch), and the bucket
// binds the attempt's UUID to it (uuid.<uuid>): the device checks it.
// It imports no OCI, NATS or Kubernetes library, so that the root updater
// links little (cmd/solar-updater's TestDeviceSideLinksLittle).
package wire
