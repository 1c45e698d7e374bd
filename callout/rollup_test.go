package callout_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/callout"
)

// TestStateWritesCannotPurge: a device may publish to its state key, but
// not with the headers that would make that publish delete other keys: a
// roll-up of the whole bucket or of its subject, or a value past 64 KiB.
// The bucket, as solar fleet apply creates it, keeps every device's keys.
func TestStateWritesCannotPurge(t *testing.T) {
	f := startFleet(t, false, callout.Issuer{})
	nc, err := f.connect(t, "A", f.op.Token(t, f.op.AddDevice(t, "A")), nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, h := range []nats.Header{
		{"Nats-Rollup": []string{"all"}},
		{"Nats-Rollup": []string{"sub"}, "KV-Operation": []string{"PURGE"}},
	} {
		m := &nats.Msg{Subject: "$KV.solar-fleet.state.A", Header: h, Data: []byte("x")}
		if _, err := js.PublishMsg(ctx, m); err == nil || !strings.Contains(err.Error(), "rollup not permitted") {
			t.Errorf("a publish with %v: %v, want refused: rollup not permitted", h, err)
		}
	}
	if _, err := js.Publish(ctx, "$KV.solar-fleet.state.A", make([]byte, 65<<10)); err == nil {
		t.Error("a 65 KiB state accepted")
	}
	for _, k := range []string{"attempt.A", "attempt.B", "state.B", "uuid.6ba7b810-9dad-11d1-80b4-00c04fd430c8"} {
		if _, err := f.kv.Get(ctx, k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}
