package callout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/callout"
	"github.com/solar-pipeline/solar/device/agentlink"
)

const binding = "uuid.6ba7b810-9dad-11d1-80b4-00c04fd430c8"

// TestDevicePermissions: device A, logged in through the callout with its
// token from the provider, reads and watches its own attempt and writes its
// own state, as the agent link does (agentlink.DeviceBucket); everything
// else is refused by the server, each refusal seen.
func TestDevicePermissions(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "xkey"}[sealed]
		t.Run(name, func(t *testing.T) { devicePermissions(t, sealed) })
	}
}

func devicePermissions(t *testing.T, sealed bool) {
	f := startFleet(t, sealed, callout.Issuer{})
	token := f.op.Token(t, f.op.AddDevice(t, "A"))
	var v violations
	nc, err := f.connect(t, "A", token, &v)
	if err != nil {
		t.Fatalf("device A refused: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := agentlink.DeviceBucket(nc, bucket)
	if e, err := kv.Get(ctx, "attempt.A"); err != nil || string(e.Value()) != "attempt.A v1" {
		t.Fatalf("reading its attempt: %v", err)
	}
	if _, err := kv.Get(ctx, binding); err != nil {
		t.Fatalf("reading a UUID binding: %v", err)
	}
	w, err := kv.Watch(ctx, "attempt.A")
	if err != nil {
		t.Fatalf("watching its attempt: %v", err)
	}
	defer func() { _ = w.Stop() }()
	expectUpdate(t, w, "attempt.A v1")
	expectUpdate(t, w, "")
	if _, err := f.kv.Put(ctx, "attempt.A", []byte("attempt.A v2")); err != nil {
		t.Fatal(err)
	}
	expectUpdate(t, w, "attempt.A v2") // notified, long before the 30 s poll
	if _, err := kv.Put(ctx, "state.A", []byte("running")); err != nil {
		t.Fatalf("writing its state: %v", err)
	}
	e, err := kv.Get(ctx, "state.A")
	if err != nil || string(e.Value()) != "running" {
		t.Fatalf("reading its state: %v", err)
	}
	if _, err := kv.Update(ctx, "state.A", []byte("running 2"), e.Revision()); err != nil {
		t.Fatalf("updating its state at the revision read: %v", err)
	}
	if _, err := kv.Update(ctx, "state.A", []byte("stale"), e.Revision()); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("updating its state at a stale revision: %v, want ErrKeyExists", err)
	}
	if e, err := f.kv.Get(ctx, "state.A"); err != nil || string(e.Value()) != "running 2" {
		t.Fatalf("its state is not in the bucket: %v", err)
	}
	if v.count() != 0 {
		t.Fatalf("violations on what is its own: %v", v.errs)
	}
	refused(t, nc, &v, f, kv)
}

func expectUpdate(t *testing.T, w jetstream.KeyWatcher, want string) {
	t.Helper()
	select {
	case e := <-w.Updates():
		got := ""
		if e != nil {
			got = string(e.Value())
		}
		if got != want {
			t.Fatalf("watch gave %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("watch gave nothing, want %q", want)
	}
}

// refused tries what device A must not do: each attempt fails and the
// server reports one permission violation for it, and the bucket is as it
// was.
func refused(t *testing.T, nc *nats.Conn, v *violations, f *fleet, kv agentlink.Store) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	request := func(subject, body string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := nc.RequestWithContext(ctx, subject, []byte(body))
			return err
		}
	}
	subscribe := func(subject string) func(context.Context) error {
		return func(context.Context) error {
			_, err := nc.SubscribeSync(subject)
			return errors.Join(err, nc.Flush(), nc.LastError())
		}
	}
	tries := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"read B's attempt", func(ctx context.Context) error { _, err := kv.Get(ctx, "attempt.B"); return err }},
		{"read B's state", func(ctx context.Context) error { _, err := kv.Get(ctx, "state.B"); return err }},
		{"write B's state", func(ctx context.Context) error { _, err := kv.Put(ctx, "state.B", []byte("x")); return err }},
		{"write its own attempt", func(ctx context.Context) error { _, err := kv.Put(ctx, "attempt.A", []byte("x")); return err }},
		{"write a UUID binding", func(ctx context.Context) error { _, err := kv.Put(ctx, binding, []byte("x")); return err }},
		{"watch B's attempt", func(ctx context.Context) error {
			_, err := kv.Watch(ctx, "attempt.B")
			return errors.Join(err, nc.LastError())
		}},
		{"subscribe to the bucket's subjects", subscribe("$KV.solar-fleet.>")},
		{"subscribe to B's inbox", subscribe("_INBOX_DEVICE.B.>")},
		{"subscribe to the common inbox", subscribe("_INBOX.>")},
		{"create a consumer", request("$JS.API.CONSUMER.CREATE.KV_solar-fleet.c.$KV.solar-fleet.attempt.A",
			`{"stream_name":"KV_solar-fleet","config":{"filter_subject":"$KV.solar-fleet.attempt.A","deliver_subject":"$JS.API.STREAM.DELETE.KV_solar-fleet"}}`)},
		{"read the bucket's information", request("$JS.API.STREAM.INFO.KV_solar-fleet", `{"subjects_filter":">"}`)},
		{"purge the bucket", request("$JS.API.STREAM.PURGE.KV_solar-fleet", "")},
		{"open another bucket", func(ctx context.Context) error { _, err := js.KeyValue(ctx, "other"); return err }},
		{"create a bucket", func(ctx context.Context) error {
			_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "mine"})
			return err
		}},
		{"list streams", func(ctx context.Context) error {
			l := js.ListStreams(ctx)
			for range l.Info() {
			}
			return l.Err()
		}},
	}
	for _, try := range tries {
		before := v.count()
		// A refused request has no answer: it ends at its deadline, and
		// the server's violation arrives at once.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := try.do(ctx)
		cancel()
		if !waitFor(func() bool { return v.count() > before }) {
			t.Errorf("%s: no permission violation reported (err %v)", try.name, err)
			continue
		}
		if err == nil {
			t.Errorf("%s: the call succeeded", try.name)
		}
		t.Logf("%s: refused, %d violation: %s", try.name, v.count()-before, v.last())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for k, want := range map[string]string{"attempt.B": "attempt.B v1", "state.B": "state.B v1", "attempt.A": "attempt.A v2", binding: binding + " v1"} {
		if e, err := f.kv.Get(ctx, k); err != nil || string(e.Value()) != want {
			t.Errorf("%s changed: %v", k, err)
		}
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(cond func() bool) bool {
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
