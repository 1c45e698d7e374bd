package fleetkv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/device/wire"
)

// Repair clears a device's rollback-failed block: it writes the state
// repaired with the operator's reason, compare-and-set over the state it
// read, and logs it. A device that is not blocked is an error.
func (b *Bucket) Repair(ctx context.Context, deviceID, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return errors.New("a repair needs a reason (--reason)")
	}
	st, rev, err := b.State(ctx, deviceID)
	if err != nil {
		return err
	}
	if st == nil || st.State != StateRollbackFailed {
		now := "nothing"
		if st != nil {
			now = st.State
		}
		return fmt.Errorf("device %s is not blocked: it reports %s, not %s", deviceID, now, StateRollbackFailed)
	}
	v, err := json.Marshal(wire.DeviceState{State: StateRepaired, Reason: reason, At: time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	key, _ := wire.StateKey(deviceID)
	if b.beforeRepairWrite != nil {
		b.beforeRepairWrite(v)
	}
	err = retry(ctx, func(ctx context.Context) error {
		_, err := b.kv.Update(ctx, key, v, rev)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		// A write retried after a lost reply finds its own value.
		if e, gerr := b.entry(ctx, key); gerr == nil && e != nil && string(e.Value()) == string(v) {
			err = nil
		} else {
			return fmt.Errorf("device %s: its state changed while repairing (revision %d was read): run again", deviceID, rev)
		}
	}
	if err != nil {
		return fmt.Errorf("device %s: writing %s: %w", deviceID, key, err)
	}
	b.log.Warn("repaired: the device takes new attempts again", "device", deviceID, "reason", reason)
	return nil
}
