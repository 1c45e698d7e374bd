// Package fleet is solar's side of the fleet agent upgrade (the decision
// record in docs/fleet.md): it packs device-agent binaries into an OCI index
// by platform (PackAgent), resolves DeviceUpgrade objects into one attempt per
// device (Resolve), stores each attempt as a content-addressed OCI artifact
// (PackAttempt, publish.Put), and compare-and-set writes each device's current
// attempt into a NATS JetStream key-value bucket (Connect, Bucket). A device
// id is checked before it is put into any key (wire.CheckDeviceID).
package fleet
