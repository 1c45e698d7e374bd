package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
)

// hungAttempt starts the updater on d and sends it, on a connection of its
// own, an attempt of v2 whose server never answers; it returns once the
// updater began it, with the cancel that drops the connection and the
// channel that gets Send's error.
func hungAttempt(t *testing.T, d *device) (drop context.CancelFunc, sent <-chan error) {
	t.Helper()
	release := make(chan struct{})
	stalled := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); stalled.Close() })
	d.start(t)
	v2 := builds["v2"]
	hung, err := wire.Attempt{DeviceID: "dev-1", TargetVersion: "2.0.0", Artifact: wire.Artifact{
		URL: stalled.URL + "/blobs/" + digestOf(v2), Digest: digestOf(v2), Size: int64(len(v2)), Platform: "linux/amd64"}}.Seal()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	preparing, errs := make(chan struct{}, 1), make(chan error, 1)
	go func() {
		_, err := wire.Send(ctx, d.paths.Socket(), hung, func(o wire.Outcome) {
			if o.State == wire.PhasePreparing {
				preparing <- struct{}{}
			}
		})
		errs <- err
	}()
	select {
	case <-preparing:
	case <-time.After(20 * time.Second):
		t.Fatal("the updater did not begin the attempt")
	}
	return cancel, errs
}

// sendV2 sends a good attempt of v2 and checks that it commits.
func sendV2(t *testing.T, d *device, server *artifactServer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := wire.Send(ctx, d.paths.Socket(), server.attempt(t, builds["v2"], "2.0.0", "blobs"), nil)
	require.NoError(t, err, "the updater takes the next attempt")
	assert.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
	assert.Equal(t, "v2", running(t, d.paths, builds))
}

// TestPeerGoneStopsTheDownload: the agent forwards an attempt whose server
// never answers, then goes away (restarted, say). The download stops with
// it: the updater takes the next attempt at once, and it commits.
func TestPeerGoneStopsTheDownload(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	drop, _ := hungAttempt(t, d)
	drop() // the agent goes away
	sendV2(t, d, server)
}

// TestNewestAttemptWins: a peer keeps its connection open on an attempt
// whose server never answers; a newer attempt on another connection
// preempts it, and commits.
func TestNewestAttemptWins(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	_, first := hungAttempt(t, d)
	sendV2(t, d, server)
	select {
	case err := <-first:
		assert.Error(t, err, "the preempted attempt gets no final outcome")
	case <-time.After(10 * time.Second):
		t.Fatal("the preempted connection stays open")
	}
}
