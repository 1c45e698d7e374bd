package agentlink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/device/wire"
)

// Link is a device agent's link to the fleet's bucket and to the root
// updater (the package doc). Set the fields, then call Run once.
type Link struct {
	// Conn is the agent's device connection (Connect).
	Conn *nats.Conn
	// Bucket is the fleet's key-value bucket ("solar-fleet").
	Bucket string
	// Store, when set, is used instead of DeviceBucket(Conn, Bucket) (a
	// test wraps it to refuse writes).
	Store Store
	// DeviceID is this device's id, checked before any key is built.
	DeviceID string
	// Socket is the updater's socket (updater.Paths.Socket).
	Socket string
	// Version is the version this binary reports ready with.
	Version string
	// Digest is this binary's SHA-256 ("sha256:<hex>"); SelfDigest's when
	// empty. The target-version check compares it with an attempt's.
	Digest string
	// Dependencies checks the agent's local dependencies (its workload
	// runtime, its disk); nil: none. It is called again at every round of
	// checks until the agent is ready.
	Dependencies func(context.Context) error
	// Recover finishes what a previous run of the agent left undone (a
	// workload mutation killed before it drained); nil: nothing. Called
	// until it succeeds once.
	Recover func(context.Context) error
	// Ready reports the agent ready, e.g. updater.MarkReady. Run calls it
	// once, when every condition holds; an error is retried.
	Ready func(context.Context) error
	// Retry is the pause between two rounds of readiness checks and the
	// first pause before a watch, a binding read or a forwarding is tried
	// again (doubled up to 40 times Retry: 10 s); 250 ms when zero.
	Retry time.Duration
	Log   *slog.Logger
}

// Run watches attempt.<DeviceID> until ctx ends, forwarding each new
// attempt, and reports ready once (ready.go). Each new attempt replaces the
// one being forwarded: its connection to the updater is closed, which stops
// a download still under way (a switch once begun ends on its own). A
// watch that ends (the bucket cannot be read, the connection closed) is
// made again.
func (l *Link) Run(ctx context.Context) error {
	key, err := wire.AttemptKey(l.DeviceID)
	if err != nil {
		return err
	}
	switch {
	case l.Conn == nil:
		return errors.New("agent link: no NATS connection")
	case l.Ready == nil:
		return errors.New("agent link: no Ready")
	case l.Socket == "" || l.Bucket == "":
		return errors.New("agent link: no updater socket or no bucket")
	}
	if l.Retry <= 0 {
		l.Retry = 250 * time.Millisecond
	}
	if l.Log == nil {
		l.Log = slog.New(slog.DiscardHandler)
	}
	if l.Store == nil {
		l.Store = DeviceBucket(l.Conn, l.Bucket)
	}
	if l.Digest == "" {
		if l.Digest, err = SelfDigest(); err != nil {
			return err
		}
	}
	s := newShared()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { l.becomeReady(ctx, s) })
	l.watch(ctx, key, s)
	return nil
}

// watch watches key, again whenever a watch ends, until ctx ends.
func (l *Link) watch(ctx context.Context, key string, s *shared) {
	var f forwarder
	defer f.stop()
	pause := l.Retry
	for ctx.Err() == nil {
		kv := l.Store
		w, err := kv.Watch(ctx, key)
		if err != nil {
			l.Log.Warn("watching the device's attempt", "bucket", l.Bucket, "key", key, "err", err)
			if !sleep(ctx, pause) {
				return
			}
			pause = min(2*pause, 40*l.Retry)
			continue
		}
		pause = l.Retry
		s.setBucket(kv)
		l.consume(ctx, kv, w, s, &f)
		_ = w.Stop()
	}
}

// consume forwards the attempts w delivers until it ends, or until the
// connection reconnected: the watch is made again at once then (nats.go
// would make its consumer again only after two missed heartbeats, 10 to
// 20 s after a server's restart). The nil entry after the initial values
// completes the snapshot.
func (l *Link) consume(ctx context.Context, kv Store, w jetstream.KeyWatcher, s *shared, f *forwarder) {
	nc := l.Conn
	reconnects := nc.Stats().Reconnects
	tick := time.NewTicker(4 * l.Retry)
	defer tick.Stop()
	var initial *wire.Current
	done := false
	for {
		var e jetstream.KeyValueEntry
		var ok bool
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if nc.IsConnected() && nc.Stats().Reconnects != reconnects {
				l.Log.Info("NATS reconnected: watching the device's attempt again")
				return
			}
			continue
		case e, ok = <-w.Updates():
		}
		switch {
		case !ok:
			return
		case e == nil:
			if !done {
				done = true
				s.snapshot(initial)
			}
			continue
		}
		cur := l.attemptOf(ctx, kv, e)
		if !done {
			initial = cur
		}
		s.newest(cur)
		if cur == nil || f.busy(cur.UUID) {
			continue // deleted, refused, or being forwarded (a watch made again)
		}
		f.stop()
		f.start(ctx, cur.UUID, func(ctx context.Context) { l.forward(ctx, kv, *cur, s) })
	}
}

// attemptOf is the attempt of a watched entry when it is this device's
// genuine one; nil for a deletion or an attempt refused (logged). A binding
// that cannot be read (NATS down) is read again until it can be.
func (l *Link) attemptOf(ctx context.Context, kv Store, e jetstream.KeyValueEntry) *wire.Current {
	if e.Operation() != jetstream.KeyValuePut {
		return nil
	}
	var cur wire.Current
	if err := json.Unmarshal(e.Value(), &cur); err != nil {
		l.Log.Error("not an attempt", "key", e.Key(), "err", err)
		return nil
	}
	if err := cur.Attempt.Verify(); err != nil || cur.Attempt.DeviceID != l.DeviceID {
		l.Log.Error("refusing an attempt that is not this device's or whose UUID is not its content's", "uuid", cur.UUID, "err", err)
		return nil
	}
	for pause := l.Retry; ; pause = min(2*pause, 40*l.Retry) {
		err := genuine(ctx, kv, cur)
		switch {
		case err == nil:
			return &cur
		case errors.Is(err, errNotBound):
			l.Log.Error("refusing an attempt that solar fleet apply did not bind", "uuid", cur.UUID, "err", err)
			return nil
		}
		l.Log.Warn("reading the attempt's binding", "uuid", cur.UUID, "err", err)
		if !sleep(ctx, pause) {
			return nil
		}
	}
}

// errNotBound: the attempt is not one solar fleet apply bound.
var errNotBound = errors.New("not bound")

// genuine checks what a UUID cannot: anyone may compute an attempt's UUID,
// but only solar fleet apply binds it (uuid.<uuid>, written once) to the
// digest of the attempt's artifact. The value's digest must be the one of
// the attempt's content, and the binding must name it. A refusal wraps
// errNotBound; any other error is a failed read.
func genuine(ctx context.Context, kv Store, cur wire.Current) error {
	d, err := wire.AttemptDigest(cur.Attempt)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotBound, err)
	}
	if cur.Digest != d {
		return fmt.Errorf("%w: the attempt's content has digest %s, its value names %q", errNotBound, d, cur.Digest)
	}
	key, err := wire.UUIDKey(cur.Attempt.UUID)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotBound, err)
	}
	e, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return fmt.Errorf("%w: no binding %s", errNotBound, key)
	case err != nil:
		return fmt.Errorf("reading %s: %w", key, err)
	case string(e.Value()) != d:
		return fmt.Errorf("%w: %s binds another digest", errNotBound, key)
	}
	return nil
}

// forward sends the attempt to the updater and publishes its outcomes. A
// forwarding that fails (no updater listening yet, or the updater ended
// the connection before a final outcome: it restarted) is sent again after
// a pause: the updater answers an attempt it finished with its outcome, and
// takes up one it dropped.
func (l *Link) forward(ctx context.Context, kv Store, cur wire.Current, s *shared) {
	for pause := l.Retry; ; pause = min(2*pause, 40*l.Retry) {
		_, err := wire.SendNotify(ctx, l.Socket, cur.Attempt, func() { s.sent(cur.UUID) },
			func(o wire.Outcome) { l.publish(ctx, kv, o) })
		if err == nil || ctx.Err() != nil {
			return
		}
		l.Log.Error("forwarding the attempt", "uuid", cur.UUID, "err", err)
		if !sleep(ctx, pause) {
			return
		}
	}
}

// forwarder runs one forwarding at a time.
type forwarder struct {
	uuid   string
	cancel context.CancelFunc
	done   chan struct{}
}

// busy: the attempt uuid is being forwarded (its forwarding has not ended).
// A watch made again delivers it again; its download goes on.
func (f *forwarder) busy(uuid string) bool {
	if f.done == nil || f.uuid != uuid {
		return false
	}
	select {
	case <-f.done:
		return false
	default:
		return true
	}
}

func (f *forwarder) start(ctx context.Context, uuid string, forward func(context.Context)) {
	ctx, f.cancel = context.WithCancel(ctx)
	f.uuid, f.done = uuid, make(chan struct{})
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

// publish writes an outcome into state.<DeviceID>, with this agent's
// version as Running.
func (l *Link) publish(ctx context.Context, kv Store, o wire.Outcome) {
	b, err := json.Marshal(wire.DeviceState{State: o.State, Version: o.Version, Step: o.Step, Reason: o.Reason,
		At: time.Now().UTC().Format(time.RFC3339), Running: l.Version})
	key, kerr := wire.StateKey(l.DeviceID)
	if err == nil && kerr == nil {
		_, err = kv.Put(ctx, key, b)
	}
	err = errors.Join(err, kerr)
	if err != nil {
		l.Log.Error("publishing the outcome", "state", o.State, "err", err)
	}
}

// sleep waits d, or less when ctx ends first: false then.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
