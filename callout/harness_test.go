package callout_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/callout"
	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
)

// fleet is a real nats-server whose devices log in through the callout,
// served in process, and a real OpenID Provider that issues their tokens.
type fleet struct {
	op       *testenv.OIDC
	nats     *testenv.NATS
	svc      *callout.Service
	kv       jetstream.KeyValue // the service user's view of the bucket
	stopSvc  context.CancelFunc
	served   chan error
	verifier *callout.Verifier
}

const bucket = "solar-fleet"

// startFleet starts the provider, the server and the callout (with an
// xkey when sealed), and fills the bucket with devices A's and B's keys.
// Under -short it skips the test: every test that starts a fleet needs a
// real nats-server.
func startFleet(t testing.TB, sealed bool, is callout.Issuer) *fleet {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: starts a nats-server")
	}
	f := &fleet{op: testenv.StartOIDC(t)}
	dir := t.TempDir()
	issuer, xkey, err := callout.NewKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := testenv.NATSOptions{CalloutIssuer: issuer}
	if sealed {
		opts.CalloutXKey = xkey
	}
	f.nats = testenv.StartNATSWith(t, opts)
	xkeyFile := ""
	if sealed {
		xkeyFile = filepath.Join(dir, callout.XKeyFile)
	}
	acc, xk, err := callout.LoadKeys(filepath.Join(dir, callout.AccountKeyFile), xkeyFile)
	if err != nil {
		t.Fatal(err)
	}
	is.URL, is.Audience, is.HTTPClient = f.op.Issuer, f.op.Audience, f.op.HTTPClient()
	f.verifier = callout.NewVerifier(is)
	f.svc = &callout.Service{Verifier: f.verifier, AccountKey: acc, XKey: xk, Account: "FLEET", Bucket: bucket,
		Log: slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	f.startCallout(t)
	_, js := f.nats.Connect(t)
	ctx := context.Background()
	// As solar fleet apply creates it.
	if _, err := fleetkv.OpenBucket(ctx, js, bucket, 1, fleetkv.Create, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if f.kv, err = js.KeyValue(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"attempt.A", "attempt.B", "state.B", binding} {
		if _, err := f.kv.Put(ctx, k, []byte(k+" v1")); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// startCallout serves the callout until stopCallout or the test's end.
func (f *fleet) startCallout(t testing.TB) {
	t.Helper()
	nc, err := nats.Connect(f.nats.URL, nats.UserInfo("auth-callout", f.nats.CalloutPassword))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.stopSvc, f.served = cancel, make(chan error, 1)
	// Closed before stopCallout returns: a subscription left on the server
	// would still take a device's request.
	go func() { err := callout.Serve(ctx, nc, f.svc, 4); nc.Close(); f.served <- err }()
	t.Cleanup(f.stopCallout)
	// Serve subscribes in its goroutine: wait until the subscription is on
	// the connection, then for a round trip after it, so that the server
	// has it before a device connects (a device that came first found no
	// callout answering and was refused: TestCalloutDown, now and then).
	deadline := time.Now().Add(10 * time.Second)
	for nc.NumSubscriptions() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the callout did not subscribe within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

func (f *fleet) stopCallout() {
	if f.stopSvc != nil {
		f.stopSvc()
		<-f.served
		f.stopSvc = nil
	}
}

// violations counts the permission violations the server reports to a
// client.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		v.mu.Lock()
		v.errs = append(v.errs, err.Error())
		v.mu.Unlock()
	}
}

func (v *violations) last() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.errs) == 0 {
		return ""
	}
	return v.errs[len(v.errs)-1]
}

func (v *violations) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.errs)
}

// connect logs device id in with token, as agentlink does (its inbox).
func (f *fleet) connect(t *testing.T, id, token string, v *violations) (*nats.Conn, error) {
	t.Helper()
	opts := []nats.Option{nats.Token(token), nats.Timeout(5 * time.Second), nats.NoReconnect()}
	if prefix, err := wire.InboxPrefix(id); err == nil {
		opts = append(opts, nats.CustomInboxPrefix(prefix))
	}
	if v != nil {
		opts = append(opts, nats.ErrorHandler(v.handler))
	}
	nc, err := nats.Connect(f.nats.URL, opts...)
	if err == nil {
		t.Cleanup(nc.Close)
	}
	return nc, err
}

// tlog writes the callout's log into the test's.
type tlog struct{ t testing.TB }

func (w tlog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
