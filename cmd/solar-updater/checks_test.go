package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
)

// unsealedAttempt gives a an attempt UUID computed as wire.Seal does, without
// its checks: an attempt that only the updater's own checks can refuse.
func unsealedAttempt(t *testing.T, a wire.Attempt) wire.Attempt {
	t.Helper()
	space := uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://solar.opendefense.cloud/fleet/attempt"))
	a.UUID = ""
	b, err := json.Marshal(a)
	require.NoError(t, err)
	a.UUID = uuid.NewSHA1(space, b).String()
	return a
}

// TestHTTPAttemptRefused: an attempt whose URL is plain http is refused
// before anything begins (no preparing, no try counted, no request), with a
// reason that says so. A redirect to http is TestTransportFailureMatrix's
// "redirect-http".
func TestHTTPAttemptRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs updater and agent processes")
	}
	var hits atomic.Int32
	b := builds["v2"]
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write(b)
	}))
	t.Cleanup(plain.Close)
	d := newDevice(t, &artifactServer{caFile: startArtifactServer(t).caFile}, nil, fastRetries...)
	a := unsealedAttempt(t, wire.Attempt{DeviceID: "dev-1", TargetVersion: "2.0.0", Artifact: wire.Artifact{
		URL: plain.URL + "/blob", Digest: digestOf(b), Size: int64(len(b)), Platform: "linux/amd64"}})
	var seen outcomes
	o, ok := d.runSeeing(t, "", a, seen.add, new(bytes.Buffer))
	require.True(t, ok)
	assert.Equal(t, wire.StateRefused, o.State)
	assert.Contains(t, o.Reason, `the artifact URL "`+plain.URL+`/blob" is not https`)
	assert.Equal(t, []wire.Outcome{o}, seen.list, "refused before anything began")
	assert.Zero(t, hits.Load(), "no request went out")
	assert.Equal(t, "v1", running(t, d.paths, builds))
}

// TestInstalledBinaryRecheckedByDigest: a binary already in
// versions/<hex>/agent (an earlier try's) is checked again by its SHA-256,
// not trusted for its size: a same-size other file there (v2 with one byte
// changed) is replaced by a new download, and v2 runs.
func TestInstalledBinaryRecheckedByDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs updater and agent processes")
	}
	server := startArtifactServer(t)
	v2 := builds["v2"]
	other := bytes.Clone(v2) // v2's size, other bytes
	other[len(other)/2] ^= 0xff
	d := newDevice(t, server, nil)
	require.NoError(t, os.MkdirAll(d.paths.Version(digestOf(v2)), 0o755))
	require.NoError(t, os.WriteFile(d.paths.Binary(digestOf(v2)), other, 0o755))
	o, ok := d.run(t, "", server.attempt(t, v2, "2.0.0", "blobs"))
	require.True(t, ok)
	assert.Equal(t, wire.PhaseCommitted, o.State, "%s: %s", o.Step, o.Reason)
	assert.Equal(t, "v2", selected(t, d.paths, builds), "the installed file is v2's bytes now")
	assert.Equal(t, "v2", running(t, d.paths, builds))
}
