package fleetkv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

// WatchOptions say how long a status watch waits for what; the zero value
// is the default of each.
type WatchOptions struct {
	// Outage is how long the connection may stay down before Next fails
	// (0: 2 minutes, about as long as nats.go's default reconnects, 60
	// tries 2 seconds apart, would try). nats.go reconnects meanwhile, and
	// the watch goes on where it stopped (its consumer is made anew once
	// its heartbeats were missed, some 10 to 20 seconds after the
	// reconnect): no change is lost.
	Outage time.Duration
	// Listing bounds the wait for the bucket's current values (0: 1
	// minute).
	Listing time.Duration
}

// StatusWatch follows the devices' attempts and states: WatchStatus lists
// them as Status does, and Next returns a device's status each time its
// attempt or state changes.
type StatusWatch struct {
	kw   jetstream.KeyWatcher
	ctx  context.Context // the watch's: cancelled, it closes kw's updates
	stop context.CancelFunc
	kv   jetstream.KeyValue
	name string
	conn *nats.Conn
	// status tells the connection's changes; down fires when it stayed
	// down for outage.
	status chan nats.Status
	down   *time.Timer
	outage time.Duration
	rows   map[string]*fleet.Status
	log    *slog.Logger
}

// WatchStatus starts watching the attempts and states of the given devices,
// or of every device, and returns their statuses now, as Status would
// (named devices in their order, those the bucket does not know included;
// else every device it knows, by id). The watch delivers what changes
// after that listing, without a gap, to Next, until ctx ends or Stop. Its
// start and the listing have timeouts; the watch itself has none.
func (b *Bucket) WatchStatus(ctx context.Context, o WatchOptions, deviceIDs ...string) (*StatusWatch, []fleet.Status, error) {
	for _, id := range deviceIDs {
		if err := wire.CheckDeviceID(id); err != nil {
			return nil, nil, err
		}
	}
	if b.missing {
		return nil, nil, errors.New("the key-value bucket does not exist: nothing to watch")
	}
	w := &StatusWatch{kv: b.kv, name: b.kv.Bucket(), conn: b.conn, outage: orDefault(o.Outage, 2*time.Minute),
		rows: map[string]*fleet.Status{}, log: b.log}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if err := w.start(ctx, deviceIDs); err != nil {
		return nil, nil, fmt.Errorf("watching the bucket %s: %w", w.name, err)
	}
	if err := w.listing(orDefault(o.Listing, listTimeout)); err != nil {
		w.Stop()
		return nil, nil, fmt.Errorf("listing the bucket %s: %w", w.name, err)
	}
	if w.conn != nil {
		w.status = w.conn.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CONNECTED, nats.CLOSED)
		if st := w.conn.Status(); st != nats.CONNECTED {
			_ = w.connection(st) // down already: Next says it
		}
	}
	return w, w.listed(deviceIDs), nil
}

// orDefault is d, or def when d is 0.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// start starts the watch of the devices' keys, with the last value of each
// first, and retries as Bucket requests do; each try has a timeout, the
// watch it starts none.
func (w *StatusWatch) start(ctx context.Context, deviceIDs []string) error {
	return retry(ctx, func(tctx context.Context) error {
		keys := []string{"attempt.>", "state.>"}
		if len(deviceIDs) > 0 {
			keys = nil
			for _, id := range deviceIDs {
				a, _ := wire.AttemptKey(id)
				s, _ := wire.StateKey(id)
				keys = append(keys, a, s)
			}
			slices.Sort(keys)
			keys = slices.Compact(keys) // a device named twice
		}
		wctx, stop := context.WithCancel(ctx)
		// The try's timeout stops the watch's start, never the watch.
		stopTimeout := context.AfterFunc(tctx, stop)
		kw, err := w.kv.WatchFiltered(wctx, keys)
		if !stopTimeout() { // tctx ended first: the try timed out
			stop()
			return fmt.Errorf("starting the watch: %w", context.Cause(tctx))
		}
		if err != nil {
			stop()
			return err
		}
		w.kw, w.ctx, w.stop = kw, wctx, stop
		return nil
	})
}

// listing reads the watch's first values, the last of every key, up to the
// marker that ends them, within timeout.
func (w *StatusWatch) listing(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case e, ok := <-w.kw.Updates():
			switch {
			case !ok:
				return w.ended()
			case e == nil:
				return nil
			}
			w.apply(e)
		case <-t.C:
			return fmt.Errorf("its current values did not arrive within %s", timeout)
		}
	}
}

// listed is the statuses of the listing: the named devices in their order,
// else every device the bucket knows, by id.
func (w *StatusWatch) listed(deviceIDs []string) []fleet.Status {
	var out []fleet.Status
	if len(deviceIDs) > 0 {
		for _, id := range deviceIDs {
			out = append(out, w.row(id))
		}
		return out
	}
	for _, id := range slices.Sorted(maps.Keys(w.rows)) {
		if s := w.row(id); s.Known() {
			out = append(out, s)
		}
	}
	return out
}

// row is the device's status as the watch knows it.
func (w *StatusWatch) row(id string) fleet.Status {
	if s := w.rows[id]; s != nil {
		return *s
	}
	return fleet.Status{DeviceID: id}
}

// apply sets a device's attempt or state from the entry of its key; false
// for a key that is neither.
func (w *StatusWatch) apply(e jetstream.KeyValueEntry) (fleet.Status, bool) {
	kind, id, _ := strings.Cut(e.Key(), ".")
	if kind != "attempt" && kind != "state" {
		return fleet.Status{}, false
	}
	s := w.rows[id]
	if s == nil {
		s = &fleet.Status{DeviceID: id}
		w.rows[id] = s
	}
	switch err := wire.CheckDeviceID(id); {
	case err != nil: // a key written by hand: never read, as in Status
		if e.Operation() != jetstream.KeyValuePut {
			err = nil
		}
		s.SetKeyError(kind, e.Key(), err)
	case kind == "attempt":
		s.SetAttempt(entryOf(e))
	default:
		s.SetState(entryOf(e))
	}
	return *s, true
}

// Next waits for the next change of a device's attempt or state and
// returns the device's status, deleted keys read as none. It fails when ctx
// ends (its error), when the connection stays down longer than
// WatchOptions.Outage or is closed, and when the watch ends (the bucket was
// deleted: ErrWatchEnded); a watch that failed stays failed.
func (w *StatusWatch) Next(ctx context.Context) (fleet.Status, error) {
	for {
		var down <-chan time.Time
		if w.down != nil {
			down = w.down.C
		}
		select {
		case <-ctx.Done():
			return fleet.Status{}, ctx.Err()
		case e, ok := <-w.kw.Updates():
			if !ok {
				return fleet.Status{}, w.ended()
			}
			if e == nil {
				continue // the end of the first values (sent once)
			}
			if s, ok := w.apply(e); ok {
				return s, nil
			}
		case st, ok := <-w.status:
			if !ok { // never closed by nats.go but by Stop: never spin on it
				w.status = nil
				continue
			}
			if err := w.connection(st); err != nil {
				return fleet.Status{}, err
			}
		case <-down:
			return fleet.Status{}, fmt.Errorf("lost the connection to NATS: not back within %s", w.outage)
		}
	}
}

// connection follows the connection's state: down, it starts the outage's
// timer; back, it stops it; closed is an error.
func (w *StatusWatch) connection(st nats.Status) error {
	switch st {
	case nats.CLOSED:
		return errors.New("lost the connection to NATS: it was closed")
	case nats.CONNECTED:
		if w.down != nil {
			w.down.Stop()
			w.down = nil
			w.log.Warn("reconnected to NATS: the watch goes on where it stopped, within some 20 seconds", "bucket", w.name)
		}
	default:
		if w.down == nil {
			w.down = time.NewTimer(w.outage)
			w.log.Warn("lost the connection to NATS: reconnecting", "bucket", w.name, "timeout", w.outage)
		}
	}
	return nil
}

// ended says why the watch's updates ended: the watch's context (Stop or
// its ctx), a closed connection, a deleted bucket, or else ErrWatchEnded.
func (w *StatusWatch) ended() error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.conn != nil && w.conn.IsClosed() {
		return errors.New("lost the connection to NATS: it was closed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := w.kv.Status(ctx); errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: the bucket %s was deleted", ErrWatchEnded, w.name)
	}
	return ErrWatchEnded
}

// Stop ends the watch; Next then fails. Not while a Next runs.
func (w *StatusWatch) Stop() {
	w.stop()
	if w.status != nil {
		w.conn.RemoveStatusListener(w.status)
		w.status = nil
	}
	if w.down != nil {
		w.down.Stop()
	}
}
