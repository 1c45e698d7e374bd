// Package pipeline runs solar's straight line once: NewPlan loads the files,
// validates them (CUE schemas, references, policies), resolves what every
// Target gets, keeps the Targets asked for and syncs their agent credentials;
// Run turns the plan into chart jobs, publishes the release and agent charts,
// then the bootstrap charts that name their versions, and reports. Beside
// the line it opens the stores commands work on (OpenStore), pushes a
// reviewed layout (Push), and drives the fleet (ApplyFleet, PushAgent,
// FleetStatus, RepairDevice). The CLI only parses flags, calls this package
// and prints. Example shows a use.
package pipeline
