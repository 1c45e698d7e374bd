package agentlink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Store is what the link does in the fleet's bucket: a jetstream.KeyValue
// has these methods, and so has DeviceBucket, which the link uses.
type Store interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error)
	Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error)
	Watch(ctx context.Context, key string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error)
}

// bucket is the fleet's bucket as a device reaches it, with nothing but the
// subjects the auth callout grants a device (callout.Permissions): direct
// gets by subject, publishes acknowledged by JetStream, and a plain
// subscription to its attempt's subject. It creates no JetStream consumer
// and asks for no stream information: what a consumer does is in the body
// of the request that creates it, which permissions cannot see (durable
// ones without bound, a deliver subject of the creator's choice), and
// stream information lists every key.
type bucket struct {
	nc   *nats.Conn
	name string
	// poll is how often a watch reads its key again, in case a change's
	// notification was lost (core NATS delivers at most once).
	poll time.Duration
}

var _ Store = bucket{}

// DeviceBucket is the fleet's bucket name on nc, reached as a device may
// (bucket); a watch polls every 30 s besides its notifications.
func DeviceBucket(nc *nats.Conn, name string) Store { return bucket{nc: nc, name: name} }

func (b bucket) subject(key string) string { return "$KV." + b.name + "." + key }

// Get reads key's last value by a direct get; a deleted or purged key is
// not found.
func (b bucket) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	m, err := b.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET.KV_"+b.name+"."+b.subject(key), nil)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	switch status := m.Header.Get("Status"); status {
	case "":
	case "404":
		return nil, jetstream.ErrKeyNotFound
	default:
		return nil, fmt.Errorf("reading %s: %s %s", key, status, m.Header.Get("Description"))
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		return nil, jetstream.ErrKeyNotFound
	}
	seq, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("reading %s: no sequence in the answer", key)
	}
	return entry{bucket: b.name, key: key, value: m.Data, revision: seq}, nil
}

// Put writes key.
func (b bucket) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return b.publish(ctx, key, value, -1)
}

// Create writes key when it has no value yet.
func (b bucket) Create(ctx context.Context, key string, value []byte, _ ...jetstream.KVCreateOpt) (uint64, error) {
	return b.publish(ctx, key, value, 0)
}

// Update writes key when its last revision is revision.
func (b bucket) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	return b.publish(ctx, key, value, int64(revision))
}

// publish writes key and waits for JetStream's acknowledgement; expect >= 0
// is the revision the key must have (0: none), else any. A key changed
// meanwhile is jetstream.ErrKeyExists, as nats.go says it.
func (b bucket) publish(ctx context.Context, key string, value []byte, expect int64) (uint64, error) {
	m := nats.NewMsg(b.subject(key))
	m.Data = value
	if expect >= 0 {
		m.Header.Set("Nats-Expected-Last-Subject-Sequence", strconv.FormatInt(expect, 10))
	}
	r, err := b.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", key, err)
	}
	var ack struct {
		Seq   uint64 `json:"seq"`
		Error *struct {
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Data, &ack); err != nil {
		return 0, fmt.Errorf("writing %s: not an acknowledgement: %w", key, err)
	}
	switch {
	case ack.Error == nil:
		return ack.Seq, nil
	case ack.Error.ErrCode == 10071: // wrong last sequence
		return 0, fmt.Errorf("writing %s: %w: %s", key, jetstream.ErrKeyExists, ack.Error.Description)
	}
	return 0, fmt.Errorf("writing %s: %s (%d)", key, ack.Error.Description, ack.Error.ErrCode)
}

// Watch delivers key's value, then nil (the snapshot is complete), then each
// change: a notification on the key's subject, and every poll, makes it
// read the key again, and a revision it has not delivered yet is delivered
// (a deletion as an entry of that operation). The notification's own
// content is never trusted: a publish JetStream refused still reaches
// plain subscribers.
func (b bucket) Watch(ctx context.Context, key string, _ ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	ch := make(chan *nats.Msg, 64)
	sub, err := b.nc.ChanSubscribe(b.subject(key), ch)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", key, err)
	}
	if err := b.nc.FlushTimeout(5 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("watching %s: %w", key, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{updates: make(chan jetstream.KeyValueEntry, 1), cancel: cancel, sub: sub}
	w.wg.Go(func() { w.run(ctx, b, key, ch) })
	return w, nil
}

type watcher struct {
	updates chan jetstream.KeyValueEntry
	cancel  context.CancelFunc
	sub     *nats.Subscription
	wg      sync.WaitGroup
}

func (w *watcher) Updates() <-chan jetstream.KeyValueEntry { return w.updates }

// Stop ends the watch; Updates is closed.
func (w *watcher) Stop() error {
	w.cancel()
	w.wg.Wait()
	return w.sub.Unsubscribe()
}

func (w *watcher) run(ctx context.Context, b bucket, key string, ch chan *nats.Msg) {
	defer close(w.updates)
	poll := b.poll
	if poll <= 0 {
		poll = 30 * time.Second
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var last uint64
	snapshot := false
	// reread: how many more reads a notification is owed. A plain
	// subscriber may hear of a publish before JetStream has stored it, so
	// a read that finds nothing new is tried again, a few times, sooner.
	reread := 0
	for pause := 50 * time.Millisecond; ; {
		changed, ok := w.read(ctx, b, key, &last, &snapshot)
		if !ok {
			return
		}
		if changed || reread == 0 {
			reread, pause = 0, 50*time.Millisecond
		}
		var again <-chan time.Time
		if reread > 0 {
			reread--
			again = time.After(pause)
			pause *= 2
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-again:
		case <-ch:
			reread, pause = 5, 50*time.Millisecond
		}
	}
}

// read reads key and delivers its value when its revision is new (a
// deletion when it is gone), then nil once (the snapshot is complete); it
// says whether it delivered a change, and false ok when ctx ended.
func (w *watcher) read(ctx context.Context, b bucket, key string, last *uint64, snapshot *bool) (changed, ok bool) {
	e, err := b.Get(ctx, key)
	var next jetstream.KeyValueEntry
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) && *last != 0:
		next, *last = entry{bucket: b.name, key: key, op: jetstream.KeyValueDelete}, 0
	case err == nil && e.Revision() != *last:
		next, *last = e, e.Revision()
	}
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, ctx.Err() == nil // read again at the next poll or notification
	}
	if next != nil && !w.send(ctx, next) {
		return false, false
	}
	if !*snapshot {
		if !w.send(ctx, nil) {
			return false, false
		}
		*snapshot = true
	}
	return next != nil, true
}

func (w *watcher) send(ctx context.Context, e jetstream.KeyValueEntry) bool {
	select {
	case w.updates <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// entry is a jetstream.KeyValueEntry read by a direct get.
type entry struct {
	bucket, key string
	value       []byte
	revision    uint64
	op          jetstream.KeyValueOp
}

func (e entry) Bucket() string                  { return e.bucket }
func (e entry) Key() string                     { return e.key }
func (e entry) Value() []byte                   { return e.value }
func (e entry) Revision() uint64                { return e.revision }
func (e entry) Created() time.Time              { return time.Time{} }
func (e entry) Delta() uint64                   { return 0 }
func (e entry) Operation() jetstream.KeyValueOp { return e.op }
