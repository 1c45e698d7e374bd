package wire

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// ErrBlocked: the device's last rollback failed (state rollback-failed),
// so it takes no attempt until it is repaired. The updater refuses with it
// and the fleet's writer does not write to such a device.
var ErrBlocked = errors.New("rollback-failed: the device takes no attempt until it is repaired")

// Current is a device's current attempt, the value of attempt.<deviceId>: the
// attempt's UUID, the digest of its OCI artifact, and the attempt itself, so
// that the device's agent needs nothing else.
type Current struct {
	UUID    string  `json:"uuid"`
	Digest  string  `json:"digest"`
	Attempt Attempt `json:"attempt"`
}

// DeviceState is what a device reports into state.<deviceId> (or what
// Repair writes there).
type DeviceState struct {
	State   string `json:"state"`
	Version string `json:"version,omitempty"`
	Step    string `json:"step,omitempty"`
	Reason  string `json:"reason,omitempty"`
	At      string `json:"at,omitempty"`
	// Running is the version of the agent that runs on the device: the
	// agent link writes it at each start before the agent reports ready
	// (keeping the rest of the value), and with every outcome it publishes.
	Running string `json:"running,omitempty"`
}

// AttemptKey is the bucket key of a device's current attempt; the device id
// is checked first.
func AttemptKey(id string) (string, error) {
	if err := CheckDeviceID(id); err != nil {
		return "", err
	}
	return "attempt." + id, nil
}

// StateKey is the bucket key of the state a device reports; the device id
// is checked first.
func StateKey(id string) (string, error) {
	if err := CheckDeviceID(id); err != nil {
		return "", err
	}
	return "state." + id, nil
}

// UUIDKey is the bucket key that binds an attempt's UUID to the digest of
// its artifact; the UUID is checked first.
func UUIDKey(id string) (string, error) {
	if _, err := uuid.Parse(id); err != nil {
		return "", fmt.Errorf("invalid UUID %q: %w", id, err)
	}
	return "uuid." + id, nil
}

// InboxPrefix is the prefix of a device's NATS reply subjects
// (nats.CustomInboxPrefix): the auth callout lets a device subscribe to its
// own inbox only, so that no device receives another's replies or watch
// deliveries. The device id is checked first.
func InboxPrefix(id string) (string, error) {
	if err := CheckDeviceID(id); err != nil {
		return "", err
	}
	return "_INBOX_DEVICE." + id, nil
}
