// Package updater is the device side of the fleet agent upgrade: the root
// updater that replaces a device's agent in one crash-safe transaction
// (docs/updater.md). It takes an attempt (device/wire's Attempt) and
//
//   - prepares, while the live agent keeps running: downloads the binary over
//     HTTPS with the attempt's size as a hard cap, verifies its SHA-256 while
//     streaming, installs it into a per-digest folder that becomes selectable
//     only once written, verified and synced, and probes it (agent --probe);
//   - switches: stops the old service, selects the candidate (a symlink
//     renamed into place, the folder synced), starts it, and commits once it
//     reports ready with the attempt's target version; otherwise it selects
//     and starts the previous binary. Rollback changes only the executable.
//
// A journal is written before every side effect; New resumes from it: any
// state before commit resolves to the previous binary. Every path derives
// from one root folder (Paths). The updater has no NATS connection: the
// device's agent forwards attempts over a Unix socket (Serve; the agent's
// side is wire.Send) and publishes the outcomes the updater reports.
package updater
