package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

// windowed is the server's attempt of build as version with the window
// [notBefore, startBefore), both whole seconds.
func windowed(t *testing.T, s *artifactServer, build, version string, notBefore, startBefore time.Time) wire.Attempt {
	t.Helper()
	a := s.attempt(t, builds[build], version, "blobs")
	a.Window = &wire.Window{NotBefore: notBefore.UTC().Format(time.RFC3339), StartBefore: startBefore.UTC().Format(time.RFC3339)}
	a, err := a.Seal()
	require.NoError(t, err)
	return a
}

// timedOutcomes records the outcomes with when each came, and the artifact
// server's hits then.
type timedOutcomes struct {
	mu   sync.Mutex
	list []timedOutcome
}

type timedOutcome struct {
	wire.Outcome
	at   time.Time
	hits int64
}

func (o *timedOutcomes) recorder(s *artifactServer) func(wire.Outcome) {
	return func(x wire.Outcome) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.list = append(o.list, timedOutcome{x, time.Now(), s.hits.Load()})
	}
}

func (o *timedOutcomes) states() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, x := range o.list {
		out = append(out, x.State)
	}
	return out
}

func (o *timedOutcomes) first(state string) (timedOutcome, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.list {
		if x.State == state {
			return x, true
		}
	}
	return timedOutcome{}, false
}

// idleJournal: the updater journalled nothing of the attempt (no phase
// under way, no try counted for its digest); a missing journal is idle.
func idleJournal(t *testing.T, p updater.Paths, digest string) {
	t.Helper()
	if _, err := os.Stat(p.Journal()); errors.Is(err, os.ErrNotExist) {
		return
	}
	j := journalOf(t, p)
	assert.True(t, j.Phase == wire.PhaseIdle || j.Phase == "", "journal phase %s", j.Phase)
	assert.Zero(t, j.Tries[digest], "no try counted for the digest")
}

// TestWindowWaits: an attempt whose window opens 5 s ahead is held: the
// updater reports waiting-for-window (with when) and downloads nothing; at
// notBefore it starts the transaction, which commits.
func TestWindowWaits(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	// Ahead by more than a slow machine takes to start the updater.
	notBefore := time.Now().Add(5 * time.Second).Truncate(time.Second).Add(time.Second)
	a := windowed(t, server, "v2", "2.0.0", notBefore, notBefore.Add(time.Hour))
	var seen timedOutcomes
	o, ok := d.runSeeing(t, "", a, seen.recorder(server), new(bytes.Buffer))
	require.True(t, ok)
	assert.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
	assert.Equal(t, "v2", running(t, d.paths, builds))
	states := seen.states()
	require.NotEmpty(t, states)
	assert.Equal(t, wire.StateWaitingForWindow, states[0], "held first: %v", states)
	waiting, _ := seen.first(wire.StateWaitingForWindow)
	assert.Contains(t, waiting.Reason, "the window opens at "+a.Window.NotBefore)
	assert.Zero(t, waiting.hits, "nothing downloaded while waiting")
	preparing, ok := seen.first(wire.PhasePreparing)
	require.True(t, ok, "%v", states)
	assert.False(t, preparing.at.Before(notBefore), "started at %s, before notBefore %s", preparing.at, notBefore)
	assert.Positive(t, server.hits.Load(), "downloaded once the window opened")
}

// TestWindowClosed: an attempt whose startBefore passed is refused with
// the reason, as is one that expires (notAfter) before its window opens;
// nothing is downloaded and nothing journalled: the digest keeps its tries.
func TestWindowClosed(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	now := time.Now().Truncate(time.Second)
	closed := windowed(t, server, "v2", "2.0.0", now.Add(-2*time.Hour), now.Add(-time.Hour))
	o, ok := d.run(t, "", closed)
	require.True(t, ok)
	assert.Equal(t, wire.StateRefused, o.State)
	assert.Contains(t, o.Reason, "the attempt's window closed at "+closed.Window.StartBefore)

	late := server.attempt(t, builds["v2"], "2.0.0", "blobs")
	late.NotAfter = now.Add(time.Hour).UTC().Format(time.RFC3339)
	late.Window = &wire.Window{NotBefore: now.Add(2 * time.Hour).UTC().Format(time.RFC3339), StartBefore: now.Add(3 * time.Hour).UTC().Format(time.RFC3339)}
	late, err := late.Seal()
	require.NoError(t, err)
	o, ok = d.run(t, "", late)
	require.True(t, ok)
	assert.Equal(t, wire.StateRefused, o.State)
	assert.Contains(t, o.Reason, "expires at "+late.NotAfter+", before its window opens")

	assert.Zero(t, server.hits.Load(), "nothing downloaded")
	idleJournal(t, d.paths, closed.Artifact.Digest)
	assert.Equal(t, "v1", running(t, d.paths, builds))
}

// sendWaiting sends a on a connection of its own and returns once the
// updater reports it waiting for its window, with the channel that gets
// Send's error.
func sendWaiting(t *testing.T, d *device, a wire.Attempt) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	waiting, errs := make(chan struct{}, 1), make(chan error, 1)
	go func() {
		_, err := wire.Send(ctx, d.paths.Socket(), a, func(o wire.Outcome) {
			if o.State == wire.StateWaitingForWindow {
				waiting <- struct{}{}
			}
		})
		errs <- err
	}()
	select {
	case <-waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("the updater did not report waiting-for-window")
	}
	return errs
}

// TestWindowNewerAttemptWins: a newer attempt replaces one waiting for its
// window at once, and commits; the waiting one gets no final outcome.
func TestWindowNewerAttemptWins(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	d.start(t)
	now := time.Now().Truncate(time.Second)
	first := sendWaiting(t, d, windowed(t, server, "v2", "2.0.0", now.Add(time.Hour), now.Add(2*time.Hour)))
	start := time.Now()
	sendV2(t, d, server)
	assert.Less(t, time.Since(start), 20*time.Second, "the newer attempt did not wait for the older one's window")
	select {
	case err := <-first:
		assert.Error(t, err, "the replaced attempt gets no final outcome")
	case <-time.After(10 * time.Second):
		t.Fatal("the replaced attempt's connection stays open")
	}
}

// TestWindowUpdaterStopped: the updater killed while an attempt waits for
// its window loses nothing: nothing was journalled or downloaded, and the
// attempt sent again (as the agent does) waits again and commits.
func TestWindowUpdaterStopped(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	pid := d.start(t)
	// Time to kill, start again and send again before the window opens.
	notBefore := time.Now().Add(12 * time.Second).Truncate(time.Second).Add(time.Second)
	a := windowed(t, server, "v2", "2.0.0", notBefore, notBefore.Add(time.Hour))
	sent := sendWaiting(t, d, a)
	require.NoError(t, syscall.Kill(-pid, syscall.SIGKILL))
	select {
	case err := <-sent:
		assert.Error(t, err, "no final outcome from a killed updater")
	case <-time.After(10 * time.Second):
		t.Fatal("the killed updater's connection stays open")
	}
	idleJournal(t, d.paths, a.Artifact.Digest)
	assert.Zero(t, server.hits.Load())
	var seen timedOutcomes
	o, ok := d.runSeeing(t, "", a, seen.recorder(server), new(bytes.Buffer))
	require.True(t, ok)
	assert.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
	assert.Equal(t, []string{wire.StateWaitingForWindow, wire.PhasePreparing}, seen.states()[:2])
	assert.Equal(t, "v2", running(t, d.paths, builds))
}

// TestWindowLaterAttemptOfTheCommittedBinary: once an attempt committed,
// another attempt of the same binary and version (the upgrade planned
// again in a later window) commits at once: nothing downloaded, no switch
// (the same agent process runs on), no try counted, its window not waited
// for; a binary the device does not run still waits for its window.
func TestWindowLaterAttemptOfTheCommittedBinary(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	now := time.Now().Truncate(time.Second)
	o, ok := d.run(t, "", windowed(t, server, "v2", "2.0.0", now.Add(-time.Minute), now.Add(time.Hour)))
	require.True(t, ok)
	require.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
	require.Equal(t, "v2", running(t, d.paths, builds))
	pids, hits := agentProcesses(d.paths), server.hits.Load()
	digest := digestOf(builds["v2"])
	require.Equal(t, 1, journalOf(t, d.paths).Tries[digest])

	for _, later := range []wire.Attempt{
		windowed(t, server, "v2", "2.0.0", now.Add(23*time.Hour), now.Add(25*time.Hour)),
		windowed(t, server, "v2", "2.0.0", now.Add(-3*time.Hour), now.Add(-2*time.Hour)),
	} {
		start := time.Now()
		o, ok := d.run(t, "", later)
		require.True(t, ok)
		assert.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
		assert.Equal(t, later.UUID, o.UUID)
		assert.Less(t, time.Since(start), 15*time.Second, "not held until its window")
	}
	assert.Equal(t, hits, server.hits.Load(), "nothing downloaded")
	assert.Equal(t, pids, agentProcesses(d.paths), "no switch: the same agent runs on")
	assert.Equal(t, 1, journalOf(t, d.paths).Tries[digest], "no try counted")

	v1 := windowed(t, server, "v1", "1.0.0", now.Add(time.Hour), now.Add(2*time.Hour))
	var seen timedOutcomes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.start(t)
	go func() { _, _ = wire.Send(ctx, d.paths.Socket(), v1, seen.recorder(server)) }()
	require.Eventually(t, func() bool { _, ok := seen.first(wire.StateWaitingForWindow); return ok }, 20*time.Second, 50*time.Millisecond,
		"another binary waits for its window")
}
