package fleetkv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

// Status reads the given devices, or every device the bucket knows of; a
// named device the bucket does not know has neither attempt nor state
// (Known). A value that is not JSON of its kind, or a listed key whose id is
// not a valid device id, makes that device's row Bad; only a failing
// request (or an invalid named id) fails the whole call.
func (b *Bucket) Status(ctx context.Context, deviceIDs ...string) ([]fleet.Status, error) {
	for _, id := range deviceIDs {
		if err := wire.CheckDeviceID(id); err != nil {
			return nil, err
		}
	}
	listed := len(deviceIDs) == 0
	var invalid map[string]*fleet.Status
	if listed && !b.missing {
		var err error
		if deviceIDs, invalid, err = b.listKeys(ctx); err != nil {
			return nil, fmt.Errorf("listing the bucket's keys: %w", err)
		}
	}
	var out []fleet.Status
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

// listKeys lists the devices of the bucket's keys (fleet.ListedDevices), within
// listTimeout. A listing whose context ended looks complete (nats.go then
// closes the keys' channel), so that is checked.
func (b *Bucket) listKeys(ctx context.Context) ([]string, map[string]*fleet.Status, error) {
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	keys, err := b.kv.ListKeys(lctx)
	if err != nil {
		return nil, nil, err
	}
	var all []string
	for k := range keys.Keys() {
		all = append(all, k)
	}
	ids, invalid := fleet.ListedDevices(all)
	if lctx.Err() != nil {
		return nil, nil, fmt.Errorf("cut short: %w", context.Cause(lctx))
	}
	return ids, invalid, nil
}

// deviceStatus reads a device's attempt and state; a value that is not JSON
// of its kind is the row's error, not the call's.
func (b *Bucket) deviceStatus(ctx context.Context, id string) (fleet.Status, error) {
	s := fleet.Status{DeviceID: id}
	key, _ := wire.AttemptKey(id) // checked by the caller
	e, err := b.entry(ctx, key)
	if err != nil {
		return s, err
	}
	s.SetAttempt(entryOf(e))
	key, _ = wire.StateKey(id)
	if e, err = b.entry(ctx, key); err != nil {
		return s, err
	}
	s.SetState(entryOf(e))
	return s, nil
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

// entryOf is e as the planner reads it; nil when e is.
func entryOf(e jetstream.KeyValueEntry) *fleet.Entry {
	if e == nil {
		return nil
	}
	return &fleet.Entry{Key: e.Key(), Value: e.Value(), Created: e.Created(), Deleted: e.Operation() != jetstream.KeyValuePut}
}

// statesAtOnce is how many keys States reads at once.
const statesAtOnce = 16

// States reads what the given devices report, state.<deviceId> alone (one
// request each, statesAtOnce at a time), in the order given: a row per
// device with its State set as Status sets it (none where the key is
// missing or deleted; StateError where the value is not a device state).
// Only a failing request, or an invalid id, fails the call.
func (b *Bucket) States(ctx context.Context, deviceIDs ...string) ([]fleet.Status, error) {
	keys := make([]string, len(deviceIDs))
	for i, id := range deviceIDs {
		key, err := wire.StateKey(id)
		if err != nil {
			return nil, err
		}
		keys[i] = key
	}
	out := make([]fleet.Status, len(deviceIDs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statesAtOnce)
	for i, id := range deviceIDs {
		g.Go(func() error {
			e, err := b.entry(gctx, keys[i])
			if err != nil {
				return err
			}
			out[i] = fleet.Status{DeviceID: id}
			out[i].SetState(entryOf(e))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
