// Package fleet is the pure planner of solar's side of the fleet agent
// upgrade (the decision record in docs/fleet.md): functions from plain data
// to plain data, with no context and no input or output. It owns which
// devices a DeviceUpgrade names and the sealed attempt each gets (Resolve,
// from the agent indexes the caller read beforehand: Artifacts, Agent; with
// the update window of the device's group at the time the caller gives), the
// version an agent's binaries are pushed as (AgentVersion), the OCI
// artifacts of an agent and of an attempt as bytes (PackAgent, PackAttempt),
// and a device's status computed from the bucket's entries given as data
// (Status, ListedDevices). A device id is checked before it is put into any
// key (wire.CheckDeviceID).
//
// It links nothing of NATS (docs/architecture_test.go): the fleet's NATS
// JetStream key-value bucket, and writing the planned attempts to it, are
// package fleetkv's; the registry's reads and writes are the caller's
// (package pipeline).
package fleet
