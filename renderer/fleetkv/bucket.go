package fleetkv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/solar-pipeline/solar/device/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// States a device reports into state.<deviceId>, and the one repair writes.
const (
	StateRollbackFailed = "rollback-failed"
	StateRepaired       = "repaired"
)

// Bucket is the fleet's JetStream key-value bucket: attempt.<deviceId>,
// state.<deviceId> and uuid.<uuid> (the digest a UUID is bound to).
type Bucket struct {
	kv  jetstream.KeyValue
	log *slog.Logger
	// conn is the bucket's connection, whose state a watch follows.
	conn *nats.Conn
	// missing: the bucket does not exist (yet), and a dry run reads it as
	// empty.
	missing bool
	// beforeRepairWrite, when set (by tests), runs between Repair's read of
	// the state and its write of value: another writer's change in that
	// window, or Repair's own write whose reply was lost.
	beforeRepairWrite func(value []byte)
}

// OpenBucket opens the bucket as mode says: with Create, a missing bucket
// is created with the given number of replicas, and OpenBucket also makes
// sure that the bucket refuses roll-ups and messages over 64 KiB (guard);
// with MayBeMissing, a missing bucket reads as empty and every write fails;
// with MustExist, it is an error. A nil log is slog's default.
func OpenBucket(ctx context.Context, js jetstream.JetStream, name string, replicas int, mode BucketMode, log *slog.Logger) (*Bucket, error) {
	if log == nil {
		log = slog.Default()
	}
	create := mode == Create
	var kv jetstream.KeyValue
	err := retry(ctx, func(ctx context.Context) (err error) {
		kv, err = js.KeyValue(ctx, name)
		if errors.Is(err, jetstream.ErrBucketNotFound) && create {
			kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 16, Replicas: replicas})
			if errors.Is(err, jetstream.ErrBucketExists) { // created meanwhile
				kv, err = js.KeyValue(ctx, name)
			}
		}
		return err
	})
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound) && mode == MustExist:
		return nil, fmt.Errorf("the key-value bucket %q does not exist: check --bucket (solar fleet apply creates it)", name)
	case errors.Is(err, jetstream.ErrBucketNotFound) && mode == MayBeMissing:
		return &Bucket{log: log, missing: true}, nil
	}
	if err == nil && create {
		err = retry(ctx, func(ctx context.Context) error { return guard(ctx, js, name) })
	}
	if err != nil {
		return nil, fmt.Errorf("opening the key-value bucket %s: %w", name, err)
	}
	return &Bucket{kv: kv, log: log, conn: js.Conn()}, nil
}

// maxValue bounds a message of the bucket: an attempt or a state is a few
// KiB.
const maxValue = 64 << 10

// guard makes the bucket's stream refuse roll-ups and large messages.
// Devices may publish to state.<id>; a roll-up header there ("Nats-Rollup:
// all", which a key-value stream allows for purges) would otherwise delete
// every other key of the bucket, every device's attempt included. Solar
// never purges a key. An update only where the stream differs.
func guard(ctx context.Context, js jetstream.JetStream, name string) error {
	st, err := js.Stream(ctx, "KV_"+name)
	if err != nil {
		return err
	}
	cfg := st.CachedInfo().Config
	if !cfg.AllowRollup && cfg.MaxMsgSize > 0 && cfg.MaxMsgSize <= maxValue {
		return nil
	}
	cfg.AllowRollup = false
	if cfg.MaxMsgSize <= 0 || cfg.MaxMsgSize > maxValue {
		cfg.MaxMsgSize = maxValue
	}
	st, err = js.UpdateStream(ctx, cfg)
	if err != nil {
		return fmt.Errorf("turning roll-ups off: %w", err)
	}
	// The server turns them back on, silently, for a stream with subject
	// delete markers or message schedules.
	if st.CachedInfo().Config.AllowRollup {
		return errors.New("the server keeps roll-ups on (subject delete markers or schedules are set): a device could purge the bucket")
	}
	return nil
}

// Exists reports whether the bucket exists: OpenBucket with MayBeMissing
// opens a missing one, which reads as empty.
func (b *Bucket) Exists() bool { return !b.missing }

// get reads a key; a missing bucket has none.
func (b *Bucket) get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if b.missing {
		return nil, jetstream.ErrKeyNotFound
	}
	var e jetstream.KeyValueEntry
	err := retry(ctx, func(ctx context.Context) (err error) {
		e, err = b.kv.Get(ctx, key)
		return err
	})
	return e, err
}

// Write is a prepared compare-and-set of a device's current attempt: what
// was read, and what Commit writes.
type Write struct {
	Attempt wire.Attempt
	Digest  string
	// Action is publish.Unchanged, publish.Create or publish.Update.
	Action string
	// Revision is the revision of attempt.<deviceId> read; 0 when none.
	Revision uint64
	b        *Bucket
	key      string
	value    []byte
}

// Apply makes the attempt, whose OCI artifact has the given digest, the
// device's current one: Prepare, then Commit unless dryRun or unchanged. It
// returns the action.
func (b *Bucket) Apply(ctx context.Context, a wire.Attempt, digest string, dryRun bool) (string, error) {
	w, err := b.Prepare(ctx, a, digest)
	if err != nil || dryRun || w.Action == publish.Unchanged {
		return actionOf(w), err
	}
	return w.Action, w.Commit(ctx)
}

func actionOf(w *Write) string {
	if w == nil {
		return ""
	}
	return w.Action
}

// Prepare reads what a write of the attempt needs and checks it: the device
// is not blocked (wire.ErrBlocked), the UUID is not bound to other content
// (ErrRebound). It writes nothing.
func (b *Bucket) Prepare(ctx context.Context, a wire.Attempt, digest string) (*Write, error) {
	if err := a.Verify(); err != nil {
		return nil, err
	}
	key, _ := wire.AttemptKey(a.DeviceID) // Verify checked the id
	if st, _, err := b.State(ctx, a.DeviceID); err != nil {
		return nil, err
	} else if st != nil && st.State == StateRollbackFailed {
		return nil, fmt.Errorf("device %s: %w (solar fleet repair %s)", a.DeviceID, wire.ErrBlocked, a.DeviceID)
	}
	if err := b.bind(ctx, a.UUID, digest, true); err != nil {
		return nil, fmt.Errorf("device %s: attempt %s: %w", a.DeviceID, a.UUID, err)
	}
	value, err := json.Marshal(wire.Current{UUID: a.UUID, Digest: digest, Attempt: a})
	if err != nil {
		return nil, err
	}
	cur, rev, err := b.current(ctx, key)
	if err != nil {
		return nil, err
	}
	w := &Write{Attempt: a, Digest: digest, Action: publish.Create, Revision: rev, b: b, key: key, value: value}
	switch {
	case cur != nil && cur.UUID == a.UUID && cur.Digest == digest:
		w.Action = publish.Unchanged
	case cur != nil:
		w.Action = publish.Update
	}
	return w, nil
}

// Commit binds the attempt's UUID to its digest, once, and writes the
// attempt: Create when Prepare read none, else Update at the revision it
// read. Another writer's change in between fails it with ErrChanged.
func (w *Write) Commit(ctx context.Context) error {
	a, b := w.Attempt, w.b
	if b.missing {
		return errors.New("the bucket does not exist: open it with create")
	}
	if err := b.bind(ctx, a.UUID, w.Digest, false); err != nil {
		return fmt.Errorf("device %s: attempt %s: %w", a.DeviceID, a.UUID, err)
	}
	err := retry(ctx, func(ctx context.Context) error {
		if w.Action == publish.Create {
			_, err := b.kv.Create(ctx, w.key, w.value)
			return err
		}
		_, err := b.kv.Update(ctx, w.key, w.value, w.Revision)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		// A write retried after a lost reply finds its own value.
		if now, _, gerr := b.current(ctx, w.key); gerr == nil && now != nil && now.UUID == a.UUID && now.Digest == w.Digest {
			return nil
		}
		return fmt.Errorf("device %s: %w (revision %d was read): run again to see the new one", a.DeviceID, ErrChanged, w.Revision)
	}
	if err != nil {
		return fmt.Errorf("device %s: writing %s: %w", a.DeviceID, w.key, err)
	}
	b.log.Info("attempt written", "device", a.DeviceID, "uuid", a.UUID, "digest", w.Digest, "action", w.Action)
	return nil
}

// bind binds a UUID to the digest of its content, once: uuid.<uuid>. With
// readOnly it only checks that the UUID is not bound to another digest.
func (b *Bucket) bind(ctx context.Context, id, digest string, readOnly bool) error {
	key, err := wire.UUIDKey(id)
	if err != nil {
		return err
	}
	if !readOnly {
		err := retry(ctx, func(ctx context.Context) error {
			_, err := b.kv.Create(ctx, key, []byte(digest))
			return err
		})
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("binding %s: %w", key, err)
		}
	}
	e, err := b.get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil // read only: not bound yet
	case err != nil:
		return fmt.Errorf("binding %s: %w", key, err)
	}
	bound := e.Value()
	if string(bound) != digest {
		return fmt.Errorf("%w (%s, not %s)", ErrRebound, bound, digest)
	}
	return nil
}

// current reads attempt.<deviceId> and its revision; nil when there is none.
func (b *Bucket) current(ctx context.Context, key string) (*wire.Current, uint64, error) {
	return getJSON[wire.Current](ctx, b, key, "an attempt")
}

// State reads what the device reports, and its revision; nil when nothing.
func (b *Bucket) State(ctx context.Context, deviceID string) (*wire.DeviceState, uint64, error) {
	key, err := wire.StateKey(deviceID)
	if err != nil {
		return nil, 0, err
	}
	return getJSON[wire.DeviceState](ctx, b, key, "a device state")
}

// getJSON reads key as a JSON document of type T (what says which, for
// errors), and its revision; nil when there is none.
func getJSON[T any](ctx context.Context, b *Bucket, key, what string) (*T, uint64, error) {
	e, err := b.entry(ctx, key)
	if e == nil || err != nil {
		return nil, 0, err
	}
	v, err := fleet.Decode[T](e.Key(), e.Value(), what)
	if err != nil {
		return nil, 0, fmt.Errorf("reading %w", err)
	}
	return v, e.Revision(), nil
}

// retry runs op until it succeeds, fails for good, or 30 seconds have
// passed: while a replicated stream elects a new leader, requests time out
// or find no responder. Each try gets 5 seconds.
func retry(ctx context.Context, op func(ctx context.Context) error) error {
	deadline := time.Now().Add(30 * time.Second)
	wait := 100 * time.Millisecond
	for {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := op(tctx)
		cancel()
		if err == nil || !transient(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// transient: the answers of a cluster without a stream leader.
func transient(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) || strings.Contains(err.Error(), "no responders") ||
		strings.Contains(err.Error(), "timeout")
}
