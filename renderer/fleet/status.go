package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/device/wire"
)

// Status is what the bucket holds about one device.
type Status struct {
	DeviceID string            `json:"deviceId"`
	Current  *wire.Current     `json:"current,omitempty"`
	State    *wire.DeviceState `json:"state,omitempty"`
}

// Known reports whether the bucket knows the device: it holds an attempt for
// it or a state the device reported.
func (s Status) Known() bool { return s.Current != nil || s.State != nil }

// Status reads the given devices, or every device the bucket knows of; a
// named device the bucket does not know has neither attempt nor state
// (Known).
func (b *Bucket) Status(ctx context.Context, deviceIDs ...string) ([]Status, error) {
	for _, id := range deviceIDs {
		if err := wire.CheckDeviceID(id); err != nil {
			return nil, err
		}
	}
	listed := len(deviceIDs) == 0
	if listed && !b.missing {
		keys, err := b.kv.ListKeys(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the bucket's keys: %w", err)
		}
		for k := range keys.Keys() {
			kind, id, _ := strings.Cut(k, ".")
			if (kind == "attempt" || kind == "state") && !slices.Contains(deviceIDs, id) {
				deviceIDs = append(deviceIDs, id)
			}
		}
		slices.Sort(deviceIDs)
	}
	var out []Status
	for _, id := range deviceIDs {
		key, _ := wire.AttemptKey(id)
		cur, _, err := b.current(ctx, key)
		if err != nil {
			return nil, err
		}
		st, _, err := b.State(ctx, id)
		if err != nil {
			return nil, err
		}
		if listed && cur == nil && st == nil {
			continue // deleted since the listing
		}
		out = append(out, Status{DeviceID: id, Current: cur, State: st})
	}
	return out, nil
}
