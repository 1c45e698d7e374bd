package fleet

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/solar-pipeline/solar/device/wire"
)

// Status is what the bucket holds about one device. A key or value that
// cannot be read is not an error of the whole listing: it is this device's
// AttemptError or StateError (Bad), and the other devices are read as usual.
type Status struct {
	DeviceID string            `json:"deviceId"`
	Current  *wire.Current     `json:"current,omitempty"`
	State    *wire.DeviceState `json:"state,omitempty"`
	// AttemptTime is when attempt.<deviceId> was written (the entry's time
	// on the server).
	AttemptTime time.Time `json:"attemptTime,omitzero"`
	// StateTime is when the device reported its state: the state's at, else
	// the entry's time on the server.
	StateTime time.Time `json:"stateTime,omitzero"`
	// AttemptError and StateError say why attempt.<deviceId> or
	// state.<deviceId> could not be read: its value is not JSON of its
	// kind, or its key names no valid device id (a key written by hand).
	AttemptError string `json:"attemptError,omitempty"`
	StateError   string `json:"stateError,omitempty"`
}

// Known reports whether the bucket knows the device: it holds an attempt for
// it or a state the device reported, readable or not.
func (s Status) Known() bool {
	return s.Current != nil || s.State != nil || s.Bad()
}

// Bad reports whether something the bucket holds about the device could not
// be read.
func (s Status) Bad() bool { return s.AttemptError != "" || s.StateError != "" }

// Entry is the value of a key as the bucket holds it.
type Entry struct {
	Key   string
	Value []byte
	// Created is when the value was written (the server's time).
	Created time.Time
	// Deleted: the key was deleted or purged; Value is then empty.
	Deleted bool
}

// ListedDevices is the sorted device ids of the keys attempt.<id> and
// state.<id>, and the rows of those ids that are not valid device ids: such
// a key (state.a.b, written by hand) is never read, as it cannot be a
// device's.
func ListedDevices(keys []string) ([]string, map[string]*Status) {
	var ids []string
	seen := map[string]bool{} // not a search of ids: 10,000 devices have 20,000 keys
	invalid := map[string]*Status{}
	for _, k := range keys {
		kind, id, _ := strings.Cut(k, ".")
		if kind != "attempt" && kind != "state" {
			continue // uuid.<uuid>, or not the fleet's
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
		err := wire.CheckDeviceID(id)
		if err == nil {
			continue
		}
		s := invalid[id]
		if s == nil {
			s = &Status{DeviceID: id}
			invalid[id] = s
		}
		s.SetKeyError(kind, k, err)
	}
	slices.Sort(ids)
	return ids, invalid
}

// SetKeyError makes s Bad for its key of kind (attempt or state) whose id
// is no valid device id (err): such a key is never read. A nil err clears
// it (the key was deleted).
func (s *Status) SetKeyError(kind, key string, err error) {
	msg := ""
	if err != nil {
		msg = fmt.Sprintf("key %q: %v", key, err)
	}
	if kind == "attempt" {
		s.AttemptError = msg
	} else {
		s.StateError = msg
	}
}

// SetAttempt sets the attempt of s from the entry of attempt.<id>: none
// when e is nil or a deletion.
func (s *Status) SetAttempt(e *Entry) {
	s.Current, s.AttemptTime, s.AttemptError = nil, time.Time{}, ""
	if e == nil || e.Deleted {
		return
	}
	s.AttemptTime = e.Created.UTC()
	var err error
	if s.Current, err = Decode[wire.Current](e.Key, e.Value, "an attempt"); err != nil {
		s.AttemptError = err.Error()
	}
}

// SetState sets the reported state of s from the entry of state.<id>: none
// when e is nil or a deletion.
func (s *Status) SetState(e *Entry) {
	s.State, s.StateTime, s.StateError = nil, time.Time{}, ""
	if e == nil || e.Deleted {
		return
	}
	s.StateTime = e.Created.UTC()
	var err error
	s.State, err = Decode[wire.DeviceState](e.Key, e.Value, "a device state")
	if err != nil {
		s.StateError = err.Error()
	} else if at, perr := time.Parse(time.RFC3339, s.State.At); perr == nil {
		s.StateTime = at.UTC()
	}
}

// Decode decodes the value of key as a JSON document of type T (what says
// which, for errors).
func Decode[T any](key string, value []byte, what string) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(value, v); err != nil {
		return nil, fmt.Errorf("%s: not %s: %w", key, what, err)
	}
	return v, nil
}
