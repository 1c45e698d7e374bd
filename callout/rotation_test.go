package callout_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/solar-pipeline/solar/callout"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestKeyRotation: the provider rotates its key; tokens of the new key are
// let in without a restart of anything (an unknown kid fetches the keys
// again), and once the old key is removed its tokens are refused.
func TestKeyRotation(t *testing.T) {
	f := startFleet(t, true, callout.Issuer{KeysMaxAge: time.Second, MinRefetch: 200 * time.Millisecond})
	key := f.op.AddDevice(t, "A")
	old := f.op.Token(t, key)
	if _, err := f.connect(t, "A", old, nil); err != nil {
		t.Fatalf("before rotation: %v", err)
	}
	oldKid := kidOf(t, old)
	newKid := f.op.Rotate(t)
	time.Sleep(250 * time.Millisecond) // past MinRefetch of the first fetch
	fresh := f.op.Token(t, key)
	if kidOf(t, fresh) != newKid {
		t.Fatalf("the provider signs with %s, not the new key %s", kidOf(t, fresh), newKid)
	}
	if _, err := f.connect(t, "A", fresh, nil); err != nil {
		t.Fatalf("a token of the new key refused: %v", err)
	}
	if _, err := f.connect(t, "A", old, nil); err != nil {
		t.Fatalf("a token of the old key, still published, refused: %v", err)
	}
	f.op.Retire(t, oldKid)
	time.Sleep(1100 * time.Millisecond) // KeysMaxAge: the set is fetched again
	if _, err := f.connect(t, "A", old, nil); err == nil {
		t.Fatal("a token of a removed key let in")
	}
	if _, err := f.connect(t, "A", fresh, nil); err != nil {
		t.Fatalf("a token of the current key refused: %v", err)
	}
}

// TestUnknownKidsAreRateLimited: a flood of tokens naming keys the issuer
// never had fetches the key set at most once per MinRefetch.
func TestUnknownKidsAreRateLimited(t *testing.T) {
	f := startFleet(t, false, callout.Issuer{MinRefetch: time.Hour})
	if _, err := f.connect(t, "A", f.op.Token(t, f.op.AddDevice(t, "A")), nil); err != nil {
		t.Fatal(err)
	}
	before := f.op.JWKSFetches()
	for i := range 20 {
		tok := withKid(t, f.op.Sign(t, claims(f, "A")), fmt.Sprintf("made-up-%d", i))
		if _, err := f.connect(t, "A", tok, nil); err == nil {
			t.Fatal("a token with a made-up kid let in")
		}
	}
	if n := f.op.JWKSFetches() - before; n > 1 {
		t.Fatalf("20 unknown kids fetched the keys %d times, want at most 1", n)
	}
}

// TestCalloutDown: with no callout answering, devices are refused (the
// server fails closed) while service users still connect; once it is back,
// devices are let in again.
func TestCalloutDown(t *testing.T) {
	f := startFleet(t, true, callout.Issuer{})
	token := f.op.Token(t, f.op.AddDevice(t, "A"))
	f.stopCallout()
	if _, err := f.connect(t, "A", token, nil); err == nil {
		t.Fatal("a device let in with no callout")
	}
	f.nats.Connect(t) // the service user, outside the callout
	f.startCallout(t)
	if _, err := f.connect(t, "A", token, nil); err != nil {
		t.Fatalf("callout back, device refused: %v", err)
	}
}

// kidOf is the kid in a compact JWS's header.
func kidOf(t *testing.T, token string) string {
	t.Helper()
	var h struct {
		Kid string `json:"kid"`
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.SplitN(token, ".", 2)[0])
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	if err != nil {
		t.Fatalf("header of %q: %v", token, err)
	}
	return h.Kid
}

// withKid is token with its header's kid replaced (its signature no longer
// matches: it is refused either way, but only after the kid is looked up).
func withKid(t *testing.T, token, kid string) string {
	t.Helper()
	parts := strings.SplitN(token, ".", 2)
	b, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	h["kid"] = kid
	b, _ = json.Marshal(h)
	return base64.RawURLEncoding.EncodeToString(b) + "." + parts[1]
}

// TestIssuerDown: while the issuer cannot be reached, a callout that has
// not yet read its discovery refuses every device, and one whose keys grew
// older than KeysMaxAge does too (fail closed); service users connect all
// along; once the issuer is back, devices are let in without a restart.
func TestIssuerDown(t *testing.T) {
	f := startFleet(t, true, callout.Issuer{KeysMaxAge: 500 * time.Millisecond, MinRefetch: 100 * time.Millisecond})
	token := f.op.Token(t, f.op.AddDevice(t, "A"))
	f.op.SetDown(true)
	if _, err := f.connect(t, "A", token, nil); err == nil {
		t.Fatal("let in before discovery, the issuer down")
	}
	f.nats.Connect(t)
	f.op.SetDown(false)
	time.Sleep(150 * time.Millisecond) // MinRefetch
	if _, err := f.connect(t, "A", token, nil); err != nil {
		t.Fatalf("issuer back, device refused: %v", err)
	}
	f.op.SetDown(true)
	time.Sleep(600 * time.Millisecond) // KeysMaxAge
	if _, err := f.connect(t, "A", token, nil); err == nil {
		t.Fatal("let in on keys older than KeysMaxAge, the issuer down")
	}
	f.nats.Connect(t)
	f.op.SetDown(false)
	time.Sleep(150 * time.Millisecond)
	if _, err := f.connect(t, "A", token, nil); err != nil {
		t.Fatalf("issuer back, device refused: %v", err)
	}
}

// TestAbandonedDiscoveryRefusesNoOne: a token verified under a context that
// already ended (a request given up, the callout stopping) fails, but the
// discovery it could not finish is not held against the issuer: the next
// token, at once, is verified (it was refused for MinRefetch, "failed
// moments ago": TestCalloutDown, now and then).
func TestAbandonedDiscoveryRefusesNoOne(t *testing.T) {
	op := testenv.StartOIDC(t)
	v := callout.NewVerifier(callout.Issuer{URL: op.Issuer, Audience: op.Audience, HTTPClient: op.HTTPClient(), MinRefetch: time.Hour})
	token := op.Token(t, op.AddDevice(t, "A"))
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Verify(gone, token); err == nil {
		t.Fatal("verified under a context that ended")
	}
	id, err := v.Verify(context.Background(), token)
	if err != nil {
		t.Fatalf("the next token refused: %v", err)
	}
	if id.DeviceID != "A" {
		t.Fatalf("device %q, want A", id.DeviceID)
	}
}
