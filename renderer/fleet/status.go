package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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

// Status reads the given devices, or every device the bucket knows of; a
// named device the bucket does not know has neither attempt nor state
// (Known). A value that is not JSON of its kind, or a listed key whose id is
// not a valid device id, makes that device's row Bad; only a failing
// request (or an invalid named id) fails the whole call.
func (b *Bucket) Status(ctx context.Context, deviceIDs ...string) ([]Status, error) {
	for _, id := range deviceIDs {
		if err := wire.CheckDeviceID(id); err != nil {
			return nil, err
		}
	}
	listed := len(deviceIDs) == 0
	var invalid map[string]*Status
	if listed && !b.missing {
		var err error
		if deviceIDs, invalid, err = b.listKeys(ctx); err != nil {
			return nil, fmt.Errorf("listing the bucket's keys: %w", err)
		}
	}
	var out []Status
	for _, id := range deviceIDs {
		if s, ok := invalid[id]; ok {
			out = append(out, *s)
			continue
		}
		s, err := b.deviceStatus(ctx, id)
		if err != nil {
			return nil, err
		}
		if listed && !s.Known() {
			continue // deleted since the listing
		}
		out = append(out, s)
	}
	return out, nil
}

// listTimeout bounds a listing of the bucket's keys or values.
const listTimeout = time.Minute

// listKeys lists the devices of the bucket's keys (listedDevices), within
// listTimeout. A listing whose context ended looks complete (nats.go then
// closes the keys' channel), so that is checked.
func (b *Bucket) listKeys(ctx context.Context) ([]string, map[string]*Status, error) {
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	keys, err := b.kv.ListKeys(lctx)
	if err != nil {
		return nil, nil, err
	}
	ids, invalid := listedDevices(keys.Keys())
	if lctx.Err() != nil {
		return nil, nil, fmt.Errorf("cut short: %w", context.Cause(lctx))
	}
	return ids, invalid, nil
}

// listedDevices is the sorted device ids of the keys attempt.<id> and
// state.<id>, and the rows of those ids that are not valid device ids: such
// a key (state.a.b, written by hand) is never read, as it cannot be a
// device's.
func listedDevices(keys <-chan string) ([]string, map[string]*Status) {
	var ids []string
	invalid := map[string]*Status{}
	for k := range keys {
		kind, id, _ := strings.Cut(k, ".")
		if kind != "attempt" && kind != "state" {
			continue // uuid.<uuid>, or not the fleet's
		}
		if !slices.Contains(ids, id) {
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
		s.setKeyError(kind, k, err)
	}
	slices.Sort(ids)
	return ids, invalid
}

// setKeyError makes s Bad for its key of kind (attempt or state) whose id
// is no valid device id (err): such a key is never read. A nil err clears
// it (the key was deleted).
func (s *Status) setKeyError(kind, key string, err error) {
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

// deviceStatus reads a device's attempt and state; a value that is not JSON
// of its kind is the row's error, not the call's.
func (b *Bucket) deviceStatus(ctx context.Context, id string) (Status, error) {
	s := Status{DeviceID: id}
	key, _ := wire.AttemptKey(id) // checked by the caller
	e, err := b.entry(ctx, key)
	if err != nil {
		return s, err
	}
	s.setAttempt(e)
	key, _ = wire.StateKey(id)
	if e, err = b.entry(ctx, key); err != nil {
		return s, err
	}
	s.setState(e)
	return s, nil
}

// setAttempt sets the attempt of s from the entry of attempt.<id>: none
// when e is nil or a deletion.
func (s *Status) setAttempt(e jetstream.KeyValueEntry) {
	s.Current, s.AttemptTime, s.AttemptError = nil, time.Time{}, ""
	if e == nil || e.Operation() != jetstream.KeyValuePut {
		return
	}
	s.AttemptTime = e.Created().UTC()
	var err error
	if s.Current, err = decode[wire.Current](e, "an attempt"); err != nil {
		s.AttemptError = err.Error()
	}
}

// setState sets the reported state of s from the entry of state.<id>: none
// when e is nil or a deletion.
func (s *Status) setState(e jetstream.KeyValueEntry) {
	s.State, s.StateTime, s.StateError = nil, time.Time{}, ""
	if e == nil || e.Operation() != jetstream.KeyValuePut {
		return
	}
	s.StateTime = e.Created().UTC()
	var err error
	s.State, err = decode[wire.DeviceState](e, "a device state")
	if err != nil {
		s.StateError = err.Error()
	} else if at, perr := time.Parse(time.RFC3339, s.State.At); perr == nil {
		s.StateTime = at.UTC()
	}
}

// entry reads key; nil when there is none.
func (b *Bucket) entry(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	e, err := b.get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	return e, nil
}
