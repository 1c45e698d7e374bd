// Package agentlink is the device agent's side of the fleet upgrade, for
// agent authors to embed: it watches the device's attempt in the fleet's
// NATS key-value bucket, forwards each new attempt to the root updater over
// its Unix socket, and publishes the outcomes the updater reports into the
// device's state key. The updater itself has no NATS connection.
package agentlink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

// Run watches attempt.<deviceID> until ctx ends. The device id is checked
// before any key is built. Each new attempt replaces the one being
// forwarded: its connection to the updater is closed, which stops a
// download still under way (a switch once begun ends on its own).
func Run(ctx context.Context, kv jetstream.KeyValue, deviceID, socket string, log *slog.Logger) error {
	key, err := wire.AttemptKey(deviceID)
	if err != nil {
		return err
	}
	w, err := kv.Watch(ctx, key)
	if err != nil {
		return fmt.Errorf("watching %s: %w", key, err)
	}
	defer w.Stop()
	var f forwarder
	defer f.stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue // the end of the initial values, or a deletion
			}
			var cur wire.Current
			if err := json.Unmarshal(e.Value(), &cur); err != nil {
				log.Error("not an attempt", "key", e.Key(), "err", err)
				continue
			}
			if err := cur.Attempt.Verify(); err != nil || cur.Attempt.DeviceID != deviceID {
				log.Error("refusing an attempt that is not this device's or whose UUID is not its content's", "uuid", cur.UUID, "err", err)
				continue
			}
			if err := genuine(ctx, kv, cur); err != nil {
				log.Error("refusing an attempt that solar fleet apply did not bind", "uuid", cur.UUID, "err", err)
				continue
			}
			f.stop()
			f.start(ctx, func(ctx context.Context) {
				_, err := updater.Send(ctx, socket, cur.Attempt, func(o updater.Outcome) { publish(ctx, kv, deviceID, o, log) })
				if err != nil && ctx.Err() == nil {
					log.Error("forwarding the attempt", "uuid", cur.UUID, "err", err)
				}
			})
		}
	}
}

// genuine checks what a UUID cannot: anyone may compute an attempt's UUID,
// but only solar fleet apply binds it (uuid.<uuid>, written once) to the
// digest of the attempt's artifact. The value's digest must be the one of
// the attempt's content, and the binding must name it.
func genuine(ctx context.Context, kv jetstream.KeyValue, cur wire.Current) error {
	d, err := wire.AttemptDigest(cur.Attempt)
	if err != nil {
		return err
	}
	if cur.Digest != d {
		return fmt.Errorf("the attempt's content has digest %s, its value names %q", d, cur.Digest)
	}
	key, err := wire.UUIDKey(cur.Attempt.UUID)
	if err != nil {
		return err
	}
	e, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return fmt.Errorf("no binding %s", key)
	case err != nil:
		return fmt.Errorf("reading %s: %w", key, err)
	case string(e.Value()) != d:
		return fmt.Errorf("%s binds another digest", key)
	}
	return nil
}

// forwarder runs one forwarding at a time.
type forwarder struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (f *forwarder) start(ctx context.Context, forward func(context.Context)) {
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		forward(ctx)
	}(f.done)
}

// stop ends the forwarding under way and waits for it.
func (f *forwarder) stop() {
	if f.cancel != nil {
		f.cancel()
		<-f.done
	}
}

// publish writes an outcome into state.<deviceID>.
func publish(ctx context.Context, kv jetstream.KeyValue, deviceID string, o updater.Outcome, log *slog.Logger) {
	b, err := json.Marshal(wire.DeviceState{State: o.State, Version: o.Version, Step: o.Step, Reason: o.Reason, At: time.Now().UTC().Format(time.RFC3339)})
	key, kerr := wire.StateKey(deviceID)
	if err == nil && kerr == nil {
		_, err = kv.Put(ctx, key, b)
	}
	err = errors.Join(err, kerr)
	if err != nil {
		log.Error("publishing the outcome", "state", o.State, "err", err)
	}
}
