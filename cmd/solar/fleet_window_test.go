package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

// fleetWindowsTree writes Devices dev-1 (ring canary), dev-2 (field) and
// dev-3 (lab), and a DeviceUpgrade of the three to 1.4.0 whose update
// windows give the canaries a window open all day, the field devices one
// that opens on New Year's midnight in Berlin, and the lab devices none.
func fleetWindowsTree(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	objs := ""
	for id, ring := range map[string]string{"dev-1": "canary", "dev-2": "field", "dev-3": "lab"} {
		objs += "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Device\nmetadata: {name: " + id +
			", namespace: fleet, labels: {ring: " + ring + "}}\nspec: {deviceId: " + id + ", platform: linux/amd64}\n---\n"
	}
	objs += `apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: field, namespace: fleet}
spec:
  agentVersion: 1.4.0
  artifact: fleet/agent:1.4.0
  deviceIds: [dev-1, dev-2, dev-3]
  updateWindows:
    - selector: {matchLabels: {ring: canary}}
      schedule: "0 0 * * *"
      duration: 24h
    - selector: {matchExpressions: [{key: ring, operator: In, values: [field]}]}
      schedule: "0 0 1 1 *"
      duration: 1h
      timeZone: Europe/Berlin
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(objs), 0o644))
}

// newYear is the New Year's hour in Berlin open at now, else the next one.
func newYear(now time.Time) (time.Time, time.Time) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	start := time.Date(now.Year(), 1, 1, 0, 0, 0, 0, berlin)
	if !now.Before(start.Add(time.Hour)) {
		start = time.Date(now.Year()+1, 1, 1, 0, 0, 0, 0, berlin)
	}
	return start, start.Add(time.Hour)
}

// TestFleetApplyUpdateWindows: fleet apply writes each device's attempt with
// its group's window (RFC 3339, UTC): the one open now for the canaries, the
// next New Year's hour in Berlin for the field devices, none for a device no
// group matches; applied again it is unchanged. A device that reports
// waiting-for-window shows in fleet status with when its window opens.
func TestFleetApplyUpdateWindows(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	nats := testenv.StartNATS(t)
	login := []string{"--registry", reg.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	code, _, stderr := fleetCLI(t, reg, append(append([]string{"fleet", "push-agent", "--repository", "fleet/agent", "--version", "1.4.0"}, login...), agentFiles(t, "1.4.0")...)...)
	require.Equal(t, 0, code, stderr)
	tree := filepath.Join(t.TempDir(), "tree")
	fleetWindowsTree(t, tree)
	apply := func() map[string]string {
		code, stdout, stderr := fleetCLI(t, reg, append([]string{"fleet", "apply", "-o", "json", "--cache-dir", "", "--nats", nats.URL, tree}, login...)...)
		require.Equal(t, 0, code, stderr)
		var a applied
		require.NoError(t, json.Unmarshal([]byte(stdout), &a), stdout)
		out := map[string]string{}
		for _, r := range a.Devices {
			out[r.DeviceID] = r.Action + r.Error
		}
		return out
	}
	before := time.Now().Truncate(time.Second)
	assert.Equal(t, map[string]string{"dev-1": "create", "dev-2": "create", "dev-3": "create"}, apply())
	after := time.Now()

	code, stdout, stderr := fleetCLI(t, reg, "fleet", "status", "-o", "json", "--nats", nats.URL)
	require.Equal(t, 0, code, stderr)
	var st struct{ Devices []fleet.Status }
	require.NoError(t, json.Unmarshal([]byte(stdout), &st))
	require.Len(t, st.Devices, 3)
	for _, s := range st.Devices {
		require.NotNil(t, s.Current, s.DeviceID)
		require.NoError(t, s.Current.Attempt.Verify(), "the window is part of the sealed content")
	}
	canary := st.Devices[0].Current.Attempt.Window
	require.NotNil(t, canary, "dev-1 is a canary")
	notBefore, startBefore, err := canary.Times()
	require.NoError(t, err)
	assert.False(t, notBefore.After(after), "open when applied: %+v", canary)
	assert.True(t, startBefore.After(before), "open when applied: %+v", canary)
	assert.Equal(t, 24*time.Hour, startBefore.Sub(notBefore))
	start, end := newYear(before)
	assert.Equal(t, &wire.Window{NotBefore: start.UTC().Format(time.RFC3339), StartBefore: end.UTC().Format(time.RFC3339)},
		st.Devices[1].Current.Attempt.Window, "dev-2 gets the next New Year's hour in Berlin, in UTC")
	assert.Nil(t, st.Devices[2].Current.Attempt.Window, "dev-3 is in no group: no window")

	assert.Equal(t, map[string]string{"dev-1": "unchanged", "dev-2": "unchanged", "dev-3": "unchanged"}, apply(),
		"the same windows: the same attempts")

	// dev-2's updater holds the attempt: the status says when it opens.
	_, js := nats.Connect(t)
	kv, err := js.KeyValue(context.Background(), "solar-fleet")
	require.NoError(t, err)
	w := st.Devices[1].Current.Attempt.Window
	state, err := json.Marshal(wire.DeviceState{State: wire.StateWaitingForWindow, Version: "1.4.0",
		Reason: "the window opens at " + w.NotBefore + "; the attempt starts before " + w.StartBefore, At: time.Now().UTC().Format(time.RFC3339)})
	require.NoError(t, err)
	_, err = kv.Put(context.Background(), "state.dev-2", state)
	require.NoError(t, err)
	code, stdout, stderr = fleetCLI(t, reg, "fleet", "status", "dev-2", "--no-headers", "--nats", nats.URL)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `^dev-2 +\S+ +1\.4\.0 +\d+s +waiting-for-window \(1\.4\.0\) +\d+s +opens in \d+[dhms]; the window opens at `+w.NotBefore, stdout)
}
