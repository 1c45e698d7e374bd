package sitereport

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

// Device is a device's state as an archive carries it: what solar fleet
// status shows of it, typed, nothing else (an attempt's artifact URL and
// digests stay behind; a device state holds no secret).
type Device struct {
	ID string `json:"id"`
	// Attempt is the current attempt's UUID, TargetVersion its version,
	// AttemptTime when it was written.
	Attempt       string    `json:"attempt,omitempty"`
	TargetVersion string    `json:"targetVersion,omitempty"`
	AttemptTime   time.Time `json:"attemptTime,omitzero"`
	// State is what the device reported (committed, rolled-back, ...),
	// with the Step that failed, the Version it was about and its Reason;
	// Running is the agent's version that runs on it; StateTime when it
	// reported.
	State     string    `json:"state,omitempty"`
	Step      string    `json:"step,omitempty"`
	Version   string    `json:"version,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Running   string    `json:"running,omitempty"`
	StateTime time.Time `json:"stateTime,omitzero"`
	// AttemptError and StateError say why the bucket's attempt or state
	// of the device could not be read.
	AttemptError string `json:"attemptError,omitempty"`
	StateError   string `json:"stateError,omitempty"`
}

// maxWord and maxText bound a Device's strings: a version, a state or a
// step; a reason or an error (export cuts them there, import refuses more).
const (
	maxWord = 256
	maxText = 1024
)

// DevicesOf is the Devices of the devices the bucket knows, sorted by id,
// their strings cut at their bounds.
func DevicesOf(st []fleet.Status) []Device {
	out := []Device{}
	for _, s := range st {
		if !s.Known() {
			continue
		}
		d := Device{ID: s.DeviceID, AttemptTime: s.AttemptTime.UTC(), StateTime: s.StateTime.UTC(),
			AttemptError: cutText(s.AttemptError, maxText), StateError: cutText(s.StateError, maxText)}
		if s.Current != nil {
			d.Attempt, d.TargetVersion = cutText(s.Current.UUID, maxWord), cutText(s.Current.Attempt.TargetVersion, maxWord)
		}
		if st := s.State; st != nil {
			d.State, d.Step, d.Version = cutText(st.State, maxWord), cutText(st.Step, maxWord), cutText(st.Version, maxWord)
			d.Reason, d.Running = cutText(st.Reason, maxText), cutText(st.Running, maxWord)
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Device) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Status is d as solar fleet status reads a device from the bucket.
func (d Device) Status() fleet.Status {
	s := fleet.Status{DeviceID: d.ID, AttemptTime: d.AttemptTime, StateTime: d.StateTime,
		AttemptError: d.AttemptError, StateError: d.StateError}
	if d.Attempt != "" || d.TargetVersion != "" {
		s.Current = &wire.Current{UUID: d.Attempt, Attempt: wire.Attempt{UUID: d.Attempt, DeviceID: d.ID, TargetVersion: d.TargetVersion}}
	}
	if d.State != "" {
		s.State = &wire.DeviceState{State: d.State, Step: d.Step, Version: d.Version, Reason: d.Reason, Running: d.Running}
	}
	return s
}

// cutText is s cut at n bytes, on a rune's boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// check names what is wrong with d, the n-th device state.
func (d Device) check(n int) []string {
	var out []string
	if err := wire.CheckDeviceID(d.ID); err != nil {
		out = append(out, fmt.Sprintf("device %d: %v", n, err))
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"attempt", d.Attempt, maxWord}, {"targetVersion", d.TargetVersion, maxWord}, {"state", d.State, maxWord},
		{"step", d.Step, maxWord}, {"version", d.Version, maxWord}, {"running", d.Running, maxWord},
		{"reason", d.Reason, maxText}, {"attemptError", d.AttemptError, maxText}, {"stateError", d.StateError, maxText}} {
		if len(f.v) > f.max {
			out = append(out, fmt.Sprintf("device %d (%.64q): its %s is %d bytes, more than the limit of %d", n, d.ID, f.name, len(f.v), f.max))
		}
	}
	return out
}
