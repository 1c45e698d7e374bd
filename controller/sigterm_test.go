package controller

import (
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestSIGTERMWaitsForThePublish: SIGTERM at the first manifest a publish
// pushes stops the controller only once that publish is done: the bootstrap
// charts naming the new release chart are pushed, the statuses written, the
// store consistent; then it exits 143.
func TestSIGTERMWaitsForThePublish(t *testing.T) {
	e := startEnvWith(t, testenv.RegistryOptions{})
	proxy, err := countproxy.Start(e.registry.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	bin := testenv.SolarBinary(t)
	r := e.startReplica(t, bin, "only", proxy.Host, "--leader-elect=false")
	e.waitReady(t, 2*time.Minute)

	var sent atomic.Pointer[time.Time]
	proxy.Hook(func(method, path string) {
		if method == "PUT" && strings.Contains(path, "/manifests/") && sent.Load() == nil {
			now := time.Now()
			sent.Store(&now)
			_ = r.cmd.Process.Signal(syscall.SIGTERM)
		}
	})
	e.changeRelease(t, "alpha", "metrics", map[string]any{"replicas": int64(2)})
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("solar controller did not stop within a minute:\n%s", r.log.String())
	}
	require.NotNil(t, sent.Load(), "SIGTERM was sent in a publish")
	t.Logf("stopped %s after SIGTERM", time.Since(*sent.Load()).Round(time.Millisecond))
	assert.Equal(t, 143, r.cmd.ProcessState.ExitCode())
	// What the run began, it finished before it exited.
	e.waitVersions(t, map[[2]string]string{{"alpha", "edge-1"}: "0.0.2", {"beta", "plant-1"}: "0.0.2"}, time.Second)
	code, out, errOut := testenv.RunSolar(t, bin, e.registry.Password+"\n", "verify", "--registry", e.registry.Host+"/solar",
		"--plain-http", "--username", e.registry.Username, "--password-stdin")
	assert.Equal(t, 0, code, "solar verify: %s\n%s", out, errOut)
}
