package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/callout"
	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
)

// TestThroughTheCallout: the identity chain to the end. The device's agent
// logs in to a real nats-server with auth_callout, with its token from a
// real OpenID Provider (the JWT profile grant of its machine key) read from
// its token file; the callout gives it its own keys only. An attempt the
// operator applies (a service user) is forwarded, installed and committed.
// The token expires: the server ends the agent's login, the agent logs in
// again with the fresh token its identity setup wrote, and the next
// attempt commits too.
func TestThroughTheCallout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs NATS, a provider, updater and agent processes")
	}
	op := testenv.StartOIDC(t)
	keys := t.TempDir()
	issuer, xkey, err := callout.NewKeys(keys)
	require.NoError(t, err)
	srv := testenv.StartNATSWith(t, testenv.NATSOptions{CalloutIssuer: issuer, CalloutXKey: xkey})
	svc := serveCallout(t, srv, op, keys)

	_, js := srv.Connect(t) // the operator: a service user
	ctx := context.Background()
	bucket, err := fleetkv.OpenBucket(ctx, js, "solar-fleet", 1, fleetkv.Create, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	key := op.AddDevice(t, "dev-1")
	op.SetTokenLifetime(30 * time.Second) // the first upgrade happens within it, even on a slow machine
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(op.Token(t, key)), 0o600))
	server := startArtifactServer(t)
	d := newDevice(t, server, []string{"--nats", srv.URL, "--device", "dev-1", "--token-file", tokenFile}, "--ready-timeout", "5s")
	t.Cleanup(func() {
		if b, _ := os.ReadFile(d.paths.Log()); t.Failed() {
			t.Logf("agents:\n%s", b)
		}
	})
	d.start(t)

	applyBuild(t, bucket, server, "v2", "2.0.0")
	st := reported(t, bucket, wire.PhaseCommitted)
	assert.Equal(t, "2.0.0", st.Version)
	assert.Equal(t, "v2", running(t, d.paths, builds))

	// The identity setup writes a fresh token; the first one expires.
	op.SetTokenLifetime(5 * time.Minute)
	require.NoError(t, os.WriteFile(tokenFile, []byte(op.Token(t, key)), 0o600))
	allowed, _ := svc.Counts()
	require.Eventually(t, func() bool { a, _ := svc.Counts(); return a > allowed }, time.Minute, 100*time.Millisecond,
		"the agent did not log in again when its first token expired")
	applyBuild(t, bucket, server, "v1", "1.0.0")
	require.Eventually(t, func() bool {
		s, err := bucket.Status(ctx, "dev-1")
		return err == nil && len(s) == 1 && s[0].State != nil && s[0].State.State == wire.PhaseCommitted && s[0].State.Version == "1.0.0"
	}, 30*time.Second, 100*time.Millisecond, "1.0.0 not committed after the agent logged in again")
	assert.Equal(t, "v1", running(t, d.paths, builds))
	_, refused := svc.Counts()
	assert.Zero(t, refused, "the callout refused the agent at some point")
}

// serveCallout serves the callout for srv and op, in process, until the
// test ends.
func serveCallout(t *testing.T, srv *testenv.NATS, op *testenv.OIDC, keys string) *callout.Service {
	t.Helper()
	acc, xk, err := callout.LoadKeys(filepath.Join(keys, callout.AccountKeyFile), filepath.Join(keys, callout.XKeyFile))
	require.NoError(t, err)
	svc := &callout.Service{
		Verifier:   callout.NewVerifier(callout.Issuer{URL: op.Issuer, Audience: op.Audience, HTTPClient: op.HTTPClient()}),
		AccountKey: acc, XKey: xk, Account: "FLEET", Bucket: "solar-fleet",
	}
	nc, err := nats.Connect(srv.URL, nats.UserInfo("auth-callout", srv.CalloutPassword))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = callout.Serve(ctx, nc, svc, 2); nc.Close(); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return svc
}
