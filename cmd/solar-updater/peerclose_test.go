package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

// TestPeerGoneStopsTheDownload: the agent forwards an attempt whose server
// never answers, then goes away (restarted, say). The download stops with
// it: the updater takes the next attempt at once, and it commits.
func TestPeerGoneStopsTheDownload(t *testing.T) {
	server := startArtifactServer(t)
	release := make(chan struct{})
	stalled := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); stalled.Close() })
	d := newDevice(t, server, nil)
	d.start(t)

	v2 := builds["v2"]
	hung, err := wire.Attempt{DeviceID: "dev-1", TargetVersion: "2.0.0", Artifact: wire.Artifact{
		URL: stalled.URL + "/blobs/" + digestOf(v2), Digest: digestOf(v2), Size: int64(len(v2)), Platform: "linux/amd64"}}.Seal()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	preparing := make(chan struct{}, 1)
	go func() {
		_, _ = updater.Send(ctx, d.paths.Socket(), hung, func(o updater.Outcome) {
			if o.State == updater.PhasePreparing {
				preparing <- struct{}{}
			}
		})
	}()
	select {
	case <-preparing:
	case <-time.After(20 * time.Second):
		t.Fatal("the updater did not begin the attempt")
	}
	cancel() // the agent goes away

	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	o, err := updater.Send(ctx2, d.paths.Socket(), server.attempt(t, v2, "2.0.0", "blobs"), nil)
	require.NoError(t, err, "the updater is free for the next attempt")
	assert.Equal(t, updater.PhaseCommitted, o.State, o.Reason)
	assert.Equal(t, "v2", running(t, d.paths, builds))
}

// TestNewestAttemptWins: a peer keeps its connection open on an attempt
// whose server never answers; a newer attempt on another connection
// preempts it, and commits.
func TestNewestAttemptWins(t *testing.T) {
	server := startArtifactServer(t)
	release := make(chan struct{})
	stalled := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); stalled.Close() })
	d := newDevice(t, server, nil)
	d.start(t)

	v2 := builds["v2"]
	hung, err := wire.Attempt{DeviceID: "dev-1", TargetVersion: "2.0.0", Artifact: wire.Artifact{
		URL: stalled.URL + "/blobs/" + digestOf(v2), Digest: digestOf(v2), Size: int64(len(v2)), Platform: "linux/amd64"}}.Seal()
	require.NoError(t, err)
	preparing := make(chan struct{}, 1)
	first := make(chan error, 1)
	go func() {
		_, err := updater.Send(context.Background(), d.paths.Socket(), hung, func(o updater.Outcome) {
			if o.State == updater.PhasePreparing {
				preparing <- struct{}{}
			}
		})
		first <- err
	}()
	select {
	case <-preparing:
	case <-time.After(20 * time.Second):
		t.Fatal("the updater did not begin the attempt")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := updater.Send(ctx, d.paths.Socket(), server.attempt(t, v2, "2.0.0", "blobs"), nil)
	require.NoError(t, err, "the newer attempt is taken")
	assert.Equal(t, updater.PhaseCommitted, o.State, o.Reason)
	assert.Equal(t, "v2", running(t, d.paths, builds))
	select {
	case err := <-first:
		assert.Error(t, err, "the preempted attempt gets no final outcome")
	case <-time.After(10 * time.Second):
		t.Fatal("the preempted connection stays open")
	}
}
