package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestCommand: keys, token and check as an operator runs them, then the
// callout served from its flags lets the device in, with its inbox only
// (a real nats-server: skipped under -short, after the first part).
func TestCommand(t *testing.T) {
	op := testenv.StartOIDC(t)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if err := run([]string{"keys", dir}, &out, &errb); err != nil {
		t.Fatalf("keys: %v", err)
	}
	var issuer, xkey string
	for _, line := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "issuer: "); ok {
			issuer = v
		}
		if v, ok := strings.CutPrefix(line, "xkey: "); ok {
			xkey = v
		}
	}
	for _, f := range []string{"account.nk", "xkey.nk"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, fi.Mode(), err)
		}
	}
	if err := run([]string{"keys", dir}, &out, &errb); err == nil {
		t.Fatal("keys overwrote the keys")
	}

	keyFile := filepath.Join(dir, "depot_7.json")
	if err := os.WriteFile(keyFile, op.AddDevice(t, "depot_7"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run([]string{"token", "--issuer", op.Issuer, "--issuer-ca", op.CAFile, "--key-file", keyFile}, &out, &errb); err != nil {
		t.Fatalf("token: %v", err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := run([]string{"token", "--issuer", op.Issuer, "--issuer-ca", op.CAFile, "--key-file", keyFile, "--out", tokenFile}, &out, &errb); err != nil {
		t.Fatalf("token --out: %v", err)
	}
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() < 100 {
		t.Fatalf("token --out wrote %v, %v", fi, err)
	}
	out.Reset()
	if err := run([]string{"check", "--issuer", op.Issuer, "--issuer-ca", op.CAFile, "--audience", op.Audience, tokenFile}, &out, &errb); err != nil {
		t.Fatalf("check: %v", err)
	}
	for _, want := range []string{"device:  depot_7", "$KV.solar-fleet.state.depot_7", "_INBOX_DEVICE.depot_7.>"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("check printed no %q:\n%s", want, out.String())
		}
	}
	if err := run([]string{"check", "--issuer", op.Issuer, "--issuer-ca", op.CAFile, "--audience", "other", tokenFile}, &out, &errb); err == nil || !strings.Contains(err.Error(), "would refuse") {
		t.Fatalf("check of a token for another audience: %v", err)
	}

	if testing.Short() {
		t.Skip("-short: serving the callout starts a nats-server")
	}
	servedLetsIn(t, op, dir, issuer, xkey, tokenFile)
}

// servedLetsIn serves the callout from its flags (keys in dir) for a server
// with auth_callout; the device of tokenFile gets in, and may not subscribe
// outside its inbox.
func servedLetsIn(t *testing.T, op *testenv.OIDC, dir, issuer, xkey, tokenFile string) {
	t.Helper()
	var errb bytes.Buffer
	srv := testenv.StartNATSWith(t, testenv.NATSOptions{CalloutIssuer: issuer, CalloutXKey: xkey})
	t.Setenv("NATS_PASSWORD", srv.CalloutPassword)
	c, err := parseServe([]string{"--nats", srv.URL, "--issuer", op.Issuer, "--issuer-ca", op.CAFile, "--audience", op.Audience,
		"--account-key", filepath.Join(dir, "account.nk"), "--xkey", filepath.Join(dir, "xkey.nk")}, &errb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() { done <- serve(ctx, c, &logs) }()
	defer func() { cancel(); <-done }()
	prefix, _ := wire.InboxPrefix("depot_7")
	tok, _ := os.ReadFile(tokenFile)
	var nc *nats.Conn
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if nc, err = nats.Connect(srv.URL, nats.Token(strings.TrimSpace(string(tok))), nats.CustomInboxPrefix(prefix)); err == nil || time.Now().After(end) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the device through the served callout: %v", err)
	}
	defer nc.Close()
	if _, err := nc.SubscribeSync(prefix + ".x"); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.SubscribeSync("_INBOX.>"); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil || nc.LastError() == nil || !strings.Contains(nc.LastError().Error(), `Subscription to "_INBOX.>"`) {
		t.Fatalf("a subscription outside its inbox: %v, last error %v", err, nc.LastError())
	}
}

// TestUsage: --help teaches and exits 0; missing flags are named, exit 1.
func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"--help"}, &out, &errb); err == nil || !strings.Contains(errb.String(), "Usage:") {
		t.Fatalf("--help: %v\n%s", err, errb.String())
	}
	if err := run([]string{"--version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "solar-auth-callout ") {
		t.Fatalf("--version: %v\n%s", err, out.String())
	}
	errb.Reset()
	err := run([]string{"--issuer", "https://id.example.com"}, &out, &errb)
	if err == nil || err.Error() != "missing --audience, --account-key (or an extra argument)" {
		t.Fatalf("missing flags: %v", err)
	}
	if err := run([]string{"--issuer", "http://id.example.com", "--audience", "a", "--account-key", "k"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "must be https") {
		t.Fatalf("an http issuer: %v", err)
	}
}
