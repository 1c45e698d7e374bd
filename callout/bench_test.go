package callout_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/solar-pipeline/solar/callout"
	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// BenchmarkDevicesConnect: 1,000 devices connect at once through the
// callout (the solar-auth-callout binary, its own process, with an xkey),
// each with its own token from the provider (the JWT profile grant), beside
// 1,000 connections of a service user that the server checks itself. It
// reports connections per second of each and the callout's CPU time per
// authorization (from /proc).
func BenchmarkDevicesConnect(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: starts a nats-server")
	}
	const devices = 1000
	op := testenv.StartOIDC(b)
	dir := b.TempDir()
	issuer, xkey, err := callout.NewKeys(dir)
	if err != nil {
		b.Fatal(err)
	}
	srv := testenv.StartNATSWith(b, testenv.NATSOptions{CalloutIssuer: issuer, CalloutXKey: xkey})
	proc := startCalloutBinary(b, op, srv, dir)
	keys := make([][]byte, devices)
	for i := range keys {
		keys[i] = op.AddDevice(b, fmt.Sprintf("dev-%04d", i))
	}
	tokens := op.Tokens(b, keys)
	b.ResetTimer()
	for range b.N {
		cpu0 := cpuTime(b, proc.Process.Pid)
		devRate, failed := connectAll(b, devices, func(i int) []nats.Option {
			prefix, _ := wire.InboxPrefix(fmt.Sprintf("dev-%04d", i))
			return []nats.Option{nats.Token(tokens[i]), nats.CustomInboxPrefix(prefix)}
		})
		cpu := cpuTime(b, proc.Process.Pid) - cpu0
		svcRate, svcFailed := connectAll(b, devices, func(int) []nats.Option {
			return []nats.Option{nats.UserInfo(srv.User, srv.Password)}
		})
		b.ReportMetric(devRate, "devices/s")
		b.ReportMetric(float64(cpu.Microseconds())/devices, "callout-CPU-µs/auth")
		b.ReportMetric(svcRate, "service-users/s")
		b.ReportMetric(float64(failed+svcFailed), "refused")
	}
}

// connectAll connects n clients at once and closes them; it returns the
// connections per second and how many failed.
func connectAll(b *testing.B, n int, opts func(i int) []nats.Option) (float64, int64) {
	b.Helper()
	url := os.Getenv("SOLAR_BENCH_NATS")
	var wg sync.WaitGroup
	var failed atomic.Int64
	conns := make([]*nats.Conn, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			nc, err := nats.Connect(url, append(opts(i), nats.Timeout(30*time.Second), nats.NoReconnect())...)
			if err != nil {
				if failed.Add(1) == 1 {
					b.Logf("connection %d: %v", i, err)
				}
				return
			}
			conns[i] = nc
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	rate := float64(n) / time.Since(t0).Seconds()
	for _, nc := range conns {
		if nc != nil {
			nc.Close()
		}
	}
	return rate, failed.Load()
}

// startCalloutBinary builds and runs solar-auth-callout against srv and op.
func startCalloutBinary(b *testing.B, op *testenv.OIDC, srv *testenv.NATS, keys string) *exec.Cmd {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "solar-auth-callout")
	build := exec.Command("go", "build", "-o", bin, "./cmd/solar-auth-callout")
	build.Dir = testenv.Root(b)
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building solar-auth-callout: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--nats", srv.URL, "--issuer", op.Issuer, "--audience", op.Audience, "--issuer-ca", op.CAFile,
		"--account-key", filepath.Join(keys, callout.AccountKeyFile), "--xkey", filepath.Join(keys, callout.XKeyFile))
	cmd.Env = append(os.Environ(), "NATS_PASSWORD="+srv.CalloutPassword)
	var log strings.Builder
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	b.Setenv("SOLAR_BENCH_NATS", srv.URL)
	for end := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "answering"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			b.Fatalf("solar-auth-callout did not start:\n%s", log.String())
		}
	}
	return cmd
}

// cpuTime is the user and system CPU time of process pid so far.
func cpuTime(b *testing.B, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name (which may hold spaces).
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// BenchmarkAnswer: one authorization, in process, as the callout answers
// it: open the sealed request, verify the device's token (keys cached),
// sign the user and the answer, seal it.
func BenchmarkAnswer(b *testing.B) {
	op := testenv.StartOIDC(b)
	dir := b.TempDir()
	if _, _, err := callout.NewKeys(dir); err != nil {
		b.Fatal(err)
	}
	acc, xk, err := callout.LoadKeys(filepath.Join(dir, callout.AccountKeyFile), filepath.Join(dir, callout.XKeyFile))
	if err != nil {
		b.Fatal(err)
	}
	svc := &callout.Service{
		Verifier:   callout.NewVerifier(callout.Issuer{URL: op.Issuer, Audience: op.Audience, HTTPClient: op.HTTPClient()}),
		AccountKey: acc, XKey: xk, Account: "FLEET", Bucket: bucket,
	}
	server, _ := nkeys.CreateServer()
	serverX, _ := nkeys.CreateCurveKeys()
	serverXPub, _ := serverX.PublicKey()
	xPub, _ := xk.PublicKey()
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	token := op.Token(b, op.AddDevice(b, "A"))
	req := jwt.NewAuthorizationRequestClaims("server")
	req.UserNkey = userPub
	req.Server.ID = "server-id"
	req.ConnectOptions.Token = token
	enc, err := req.Encode(server)
	if err != nil {
		b.Fatal(err)
	}
	sealed, _ := serverX.Seal([]byte(enc), xPub)
	if _, err := svc.Answer(context.Background(), sealed, serverXPub); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.Answer(context.Background(), sealed, serverXPub); err != nil {
			b.Fatal(err)
		}
	}
	if allowed, _ := svc.Counts(); allowed != int64(b.N)+1 {
		b.Fatalf("allowed %d of %d", allowed, b.N+1)
	}
}
