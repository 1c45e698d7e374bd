// Package fleetkv is the client of the fleet's NATS JetStream key-value
// bucket (docs/fleet.md): it connects to NATS with the NATS CLI's logins
// (Connect), opens or creates the bucket and guards it against roll-ups
// (OpenBucket), compare-and-set writes each device's current attempt and
// binds its UUID to its digest once (Bucket.Prepare, Write.Commit, Apply,
// which stores each attempt's artifact with the caller's PutAttempt
// first), clears a rollback-failed block (Bucket.Repair), and reads and
// watches the devices' attempts and states (Bucket.Status, WatchStatus,
// with the watch's reconnect and outage rules).
//
// What it reads is computed by the planner, package fleet (fleet.Status,
// fleet.PackAttempt); fleetkv holds the NATS side alone, so that the
// planner links nothing of NATS.
package fleetkv
