package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// fleetWavesTree writes Devices dev-1…dev-4 (linux/amd64) and a DeviceUpgrade
// of all four to version in two waves: one canary, then the rest.
func fleetWavesTree(t *testing.T, dir, version string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	objs := ""
	for _, id := range []string{"dev-1", "dev-2", "dev-3", "dev-4"} {
		objs += "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Device\nmetadata: {name: " + id +
			", namespace: fleet, labels: {ring: field}}\nspec: {deviceId: " + id + ", platform: linux/amd64}\n---\n"
	}
	objs += `apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: field, namespace: fleet}
spec:
  agentVersion: ` + version + `
  artifact: fleet/agent:` + version + `
  deviceSelector: {matchLabels: {ring: field}}
  rollout:
    waves:
      - {name: canary, count: 1}
      - {name: rest}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(objs), 0o644))
}

// TestFleetApplyInWaves (issue 50): a DeviceUpgrade with a rollout policy
// writes an attempt for its canary only; the other devices get theirs once
// the canary reports the version committed. A canary that reports
// rolled-back halts the next upgrade: no new attempt anywhere, and solar
// rollout status says so. The upgrade after that is not halted by that
// rollback (an earlier attempt's), but by a canary that reports
// rollback-failed, which status names for repair.
func TestFleetApplyInWaves(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	nats := testenv.StartNATS(t)
	login := []string{"--registry", reg.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	for _, v := range []string{"1.4.0", "1.5.0", "1.6.0"} {
		code, _, stderr := fleetCLI(t, reg, append(append([]string{"fleet", "push-agent", "--repository", "fleet/agent", "--version", v}, login...), agentFiles(t, v)...)...)
		require.Equal(t, 0, code, stderr)
	}
	tree := filepath.Join(t.TempDir(), "tree")
	actions := func() map[string]string {
		t.Helper()
		code, stdout, stderr := fleetCLI(t, reg, append([]string{"fleet", "apply", "-o", "json", "--cache-dir", "", "--nats", nats.URL, tree}, login...)...)
		require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
		var a applied
		require.NoError(t, json.Unmarshal([]byte(stdout), &a), stdout)
		out := map[string]string{}
		for _, r := range a.Devices {
			out[r.DeviceID] = r.Action
		}
		return out
	}
	_, js := nats.Connect(t)
	state := func(id, value string) {
		t.Helper()
		kv, err := js.KeyValue(context.Background(), "solar-fleet")
		require.NoError(t, err)
		_, err = kv.Put(context.Background(), "state."+id, []byte(value))
		require.NoError(t, err)
	}

	fleetWavesTree(t, tree, "1.4.0")
	assert.Equal(t, map[string]string{"dev-1": "create", "dev-2": "held", "dev-3": "held", "dev-4": "held"}, actions(), "the canary only")
	assert.Equal(t, map[string]string{"dev-1": "unchanged", "dev-2": "held", "dev-3": "held", "dev-4": "held"}, actions(), "nothing passes without its state")
	state("dev-1", `{"state":"committed","version":"1.4.0"}`)
	assert.Equal(t, map[string]string{"dev-1": "unchanged", "dev-2": "create", "dev-3": "create", "dev-4": "create"}, actions(), "the canary committed: the rest")

	fleetWavesTree(t, tree, "1.5.0")
	assert.Equal(t, map[string]string{"dev-1": "update", "dev-2": "held", "dev-3": "held", "dev-4": "held"}, actions(), "a new upgrade starts with its canary")
	state("dev-1", `{"state":"rolled-back","version":"1.5.0","reason":"not ready within 60s"}`)
	assert.Equal(t, map[string]string{"dev-1": "unchanged", "dev-2": "held", "dev-3": "held", "dev-4": "held"}, actions(), "halted: no new attempt anywhere")
	code, stdout, stderr := fleetCLI(t, reg, append([]string{"rollout", "status", "deviceupgrade-field", "-n", "fleet", "--exit-code"}, login...)...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, "Halted")
	assert.Contains(t, stdout, "WAVE    DEVICE  STATE", "a device rollout's members are devices")
	assert.Contains(t, stdout, "rolled-back 1.5.0 not ready within 60s")

	fleetWavesTree(t, tree, "1.6.0")
	assert.Equal(t, map[string]string{"dev-1": "update", "dev-2": "held", "dev-3": "held", "dev-4": "held"}, actions(), "a new upgrade starts with its canary")
	assert.Equal(t, map[string]string{"dev-1": "unchanged", "dev-2": "held", "dev-3": "held", "dev-4": "held"}, actions(),
		"the canary's rollback of 1.5.0 does not fail 1.6.0")
	state("dev-1", `{"state":"rollback-failed","version":"1.6.0","reason":"the previous agent did not start"}`)
	code, stdout, stderr = fleetCLI(t, reg, append([]string{"fleet", "apply", "--cache-dir", "", "--nats", nats.URL, tree}, login...)...)
	assert.Equal(t, 1, code, "a blocked device is an error: %s", stderr)
	assert.Contains(t, stderr, "dev-1")
	code, stdout, stderr = fleetCLI(t, reg, append([]string{"rollout", "status", "deviceupgrade-field", "-n", "fleet", "--exit-code"}, login...)...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, "Halted")
	assert.Contains(t, stdout, "solar fleet repair dev-1")
}
