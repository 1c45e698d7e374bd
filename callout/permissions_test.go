package callout_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/callout"
)

// TestDevicePermissions: device A, logged in through the callout with its
// token from the provider, reads and watches its own attempt and writes its
// own state; everything else is refused by the server, each refusal seen.
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
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatalf("device A cannot open the bucket: %v", err)
	}
	// Its own: read, watch (initial value and a change), write its state,
	// read a UUID binding.
	if e, err := kv.Get(ctx, "attempt.A"); err != nil || string(e.Value()) != "attempt.A v1" {
		t.Fatalf("reading its attempt: %v", err)
	}
	if _, err := kv.Get(ctx, "uuid.6ba7b810-9dad-11d1-80b4-00c04fd430c8"); err != nil {
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
	expectUpdate(t, w, "attempt.A v2")
	if _, err := kv.Put(ctx, "state.A", []byte("running")); err != nil {
		t.Fatalf("writing its state: %v", err)
	}
	if e, err := f.kv.Get(ctx, "state.A"); err != nil || string(e.Value()) != "running" {
		t.Fatalf("its state is not in the bucket: %v", err)
	}
	// Compare-and-set over what it read, as the agent link writes.
	e, err := kv.Get(ctx, "state.A")
	if err != nil {
		t.Fatalf("reading its state: %v", err)
	}
	if _, err := kv.Update(ctx, "state.A", []byte("running 2"), e.Revision()); err != nil {
		t.Fatalf("updating its state: %v", err)
	}
	if v.count() != 0 {
		t.Fatalf("violations on what is its own: %v", v.errs)
	}
	refused(t, nc, &v, f, kv, js)
	hiddenFilters(t, nc)
}

// hiddenFilters: a consumer created on its own attempt's subject whose
// body asks for more is refused by the server, which compares the two.
func hiddenFilters(t *testing.T, nc *nats.Conn) {
	t.Helper()
	subj := "$JS.API.CONSUMER.CREATE.KV_solar-fleet.sneaky.$KV.solar-fleet.attempt.A"
	for _, cfg := range []string{
		`{"filter_subject":"$KV.solar-fleet.>"}`,
		`{"filter_subjects":["$KV.solar-fleet.attempt.A","$KV.solar-fleet.attempt.B"]}`,
	} {
		m, err := nc.Request(subj, []byte(`{"stream_name":"KV_solar-fleet","config":`+cfg+`}`), 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		var resp struct {
			Error *struct {
				Code    int    `json:"err_code"`
				Message string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Error == nil {
			t.Fatalf("consumer %s created: %s", cfg, m.Data)
		}
		t.Logf("consumer %s: refused, %d %s", cfg, resp.Error.Code, resp.Error.Message)
	}
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
func refused(t *testing.T, nc *nats.Conn, v *violations, f *fleet, kv jetstream.KeyValue, js jetstream.JetStream) {
	t.Helper()
	short := func() (context.Context, context.CancelFunc) {
		// A refused request has no answer: it ends at its deadline, and
		// the server's violation arrives at once.
		return context.WithTimeout(context.Background(), 500*time.Millisecond)
	}
	tries := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"read B's attempt", func(ctx context.Context) error { _, err := kv.Get(ctx, "attempt.B"); return err }},
		{"read B's state", func(ctx context.Context) error { _, err := kv.Get(ctx, "state.B"); return err }},
		{"write B's state", func(ctx context.Context) error { _, err := kv.Put(ctx, "state.B", []byte("x")); return err }},
		{"write its own attempt", func(ctx context.Context) error { _, err := kv.Put(ctx, "attempt.A", []byte("x")); return err }},
		{"write a UUID binding", func(ctx context.Context) error {
			_, err := kv.Put(ctx, "uuid.6ba7b810-9dad-11d1-80b4-00c04fd430c8", []byte("x"))
			return err
		}},
		{"watch B's attempt", func(ctx context.Context) error { _, err := kv.Watch(ctx, "attempt.B"); return err }},
		{"watch the whole bucket", func(ctx context.Context) error { _, err := kv.WatchAll(ctx); return err }},
		{"delete its attempt", func(ctx context.Context) error { return kv.Delete(ctx, "attempt.A") }},
		{"open another bucket", func(ctx context.Context) error { _, err := js.KeyValue(ctx, "other"); return err }},
		{"create a bucket", func(ctx context.Context) error {
			_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "mine"})
			return err
		}},
		{"subscribe to B's inbox", func(context.Context) error {
			_, err := nc.SubscribeSync("_INBOX_DEVICE.B.>")
			return errors.Join(err, nc.Flush(), nc.LastError())
		}},
		{"subscribe to the bucket's subjects", func(context.Context) error {
			_, err := nc.SubscribeSync("$KV.solar-fleet.>")
			return errors.Join(err, nc.Flush(), nc.LastError())
		}},
		{"create a consumer whose subject hides its filter", func(ctx context.Context) error {
			_, err := nc.RequestWithContext(ctx, "$JS.API.CONSUMER.CREATE.KV_solar-fleet", []byte(`{"stream_name":"KV_solar-fleet","config":{"filter_subject":"$KV.solar-fleet.>"}}`))
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
		ctx, cancel := short()
		err := try.do(ctx)
		cancel()
		_ = nc.Flush()
		if !waitFor(func() bool { return v.count() > before }) {
			t.Errorf("%s: no permission violation reported (err %v)", try.name, err)
			continue
		}
		if err == nil {
			t.Errorf("%s: the call succeeded", try.name)
		}
		t.Logf("%s: refused, %d violation: %s", try.name, v.count()-before, v.last())
	}
	ctx, cancel := short()
	defer cancel()
	for _, k := range []string{"attempt.B", "state.B"} {
		if e, err := f.kv.Get(ctx, k); err != nil || string(e.Value()) != k+" v1" {
			t.Errorf("%s changed: %v", k, err)
		}
	}
	if e, err := f.kv.Get(ctx, "attempt.A"); err != nil || string(e.Value()) != "attempt.A v2" {
		t.Errorf("attempt.A changed: %v", err)
	}
	if _, err := f.kv.Get(ctx, "state.B"); errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Error("state.B is gone")
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
