package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// agentFiles writes two fake agent binaries, for arm64 and amd64, of the
// given build.
func agentFiles(t *testing.T, build string) []string {
	t.Helper()
	dir := t.TempDir()
	var args []string
	for _, arch := range []string{"arm64", "amd64"} {
		f := filepath.Join(dir, "agent-"+arch)
		require.NoError(t, os.WriteFile(f, []byte("#!/bin/sh\necho agent "+build+" "+arch+"\n"), 0o755))
		args = append(args, f+"=linux/"+arch)
	}
	return args
}

// fleetCLI runs solar with the registry password on stdin.
func fleetCLI(t *testing.T, reg *testenv.Registry, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(reg.Password+"\n"), &stdout, &stderr)
	assert.NotContains(t, stdout.String()+stderr.String(), reg.Password, "the password is never printed")
	return code, stdout.String(), stderr.String()
}

type pushed struct {
	Digest    string                    `json:"digest"`
	Action    string                    `json:"action"`
	Platforms []pipeline.PushedPlatform `json:"platforms"`
}

// TestFleetPushAgent: push-agent twice gives the same digests and uploads
// nothing the second time; the index resolves per platform with
// go-containerregistry and validates; other files under the same version are
// refused; the layout gets the same digests.
func TestFleetPushAgent(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	files := agentFiles(t, "1.4.0")
	push := func(files []string, to ...string) (int, pushed, string) {
		args := append([]string{"fleet", "push-agent", "-o", "json", "--repository", "fleet/agent", "--version", "1.4.0"}, to...)
		code, stdout, stderr := fleetCLI(t, reg, append(args, files...)...)
		var p pushed
		if code == 0 {
			require.NoError(t, json.Unmarshal([]byte(stdout), &p), stdout)
		}
		return code, p, stderr
	}
	login := []string{"--registry", proxy.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	code, first, stderr := push(files, login...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "create", first.Action)
	require.Len(t, first.Platforms, 2)
	proxy.Take()
	code, again, stderr := push(files, login...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, first.Digest, again.Digest, "the same files give the same digest")
	assert.Equal(t, first.Platforms, again.Platforms)
	assert.Equal(t, "unchanged", again.Action)
	assert.Zero(t, countproxy.Writes(proxy.Take()), "nothing is uploaded again")

	for _, p := range first.Platforms {
		b, err := os.ReadFile(strings.SplitN(files[map[string]int{"linux/arm64": 0, "linux/amd64": 1}[p.Platform]], "=", 2)[0])
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), p.Digest, p.Platform)
		assert.Equal(t, int64(len(b)), p.Size)
		assert.Equal(t, "https://"+proxy.Host+"/v2/solar/fleet/agent/blobs/"+p.Digest, p.URL, "the URL a device downloads from")
	}

	// go-containerregistry reads the index back by platform and validates it.
	ref, err := name.ParseReference(reg.Host+"/solar/fleet/agent:1.4.0", name.Insecure)
	require.NoError(t, err)
	auth := remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password})
	idx, err := remote.Index(ref, auth)
	require.NoError(t, err)
	require.NoError(t, validate.Index(idx))
	d, err := idx.Digest()
	require.NoError(t, err)
	assert.Equal(t, first.Digest, d.String())
	for _, p := range first.Platforms {
		os, arch, _ := strings.Cut(p.Platform, "/")
		img, err := remote.Image(ref, auth, remote.WithPlatform(v1.Platform{OS: os, Architecture: arch}))
		require.NoError(t, err, p.Platform)
		layers, err := img.Layers()
		require.NoError(t, err)
		require.Len(t, layers, 1)
		ld, err := layers[0].Digest()
		require.NoError(t, err)
		assert.Equal(t, p.Digest, ld.String(), "%s resolves to its binary", p.Platform)
	}

	code, _, stderr = push(agentFiles(t, "1.4.0-rebuilt"), login...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "tag 1.4.0 holds other content: versions are immutable")

	out := filepath.Join(t.TempDir(), "out")
	code, layout, stderr := push(files, "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, first.Digest, layout.Digest, "the layout gets the same digest")
	code, _, stderr = fleetCLI(t, reg, "verify", "--out", out)
	assert.Equal(t, 1, code, "not solar's chart: verify has nothing to check (%s)", stderr)
	assert.Contains(t, stderr, "nothing to verify: no chart repository (only fleet/agent, not solar's charts) in the layout "+out)
}

// fleetTree writes Devices dev-1 (linux/arm64) and dev-2 (linux/amd64) and a
// DeviceUpgrade of both to version, from the agent index fleet/agent:version.
func fleetTree(t *testing.T, dir, version string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	objs := `apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: dev-1, namespace: fleet, labels: {ring: canary}}
spec: {deviceId: dev-1, platform: linux/arm64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: dev-2, namespace: fleet, labels: {ring: canary}}
spec: {deviceId: dev-2, platform: linux/amd64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: canary, namespace: fleet}
spec:
  agentVersion: ` + version + `
  artifact: fleet/agent:` + version + `
  deviceSelector: {matchLabels: {ring: canary}}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(objs), 0o644))
}

type applied struct {
	Devices  []fleet.Result   `json:"devices"`
	Problems []map[string]any `json:"problems"`
}

// TestFleetApply: the CLI end to end on a real registry and a real NATS:
// apply creates one attempt per device, the agent binary of its platform;
// again it is unchanged; a device reporting rollback-failed is refused (the
// other goes on, exit 1) until repair; status shows it all.
func TestFleetApply(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	nats := testenv.StartNATS(t)
	login := []string{"--registry", reg.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	for _, v := range []string{"1.4.0", "1.5.0"} {
		code, _, stderr := fleetCLI(t, reg, append(append([]string{"fleet", "push-agent", "--repository", "fleet/agent", "--version", v}, login...), agentFiles(t, v)...)...)
		require.Equal(t, 0, code, stderr)
	}
	tree := filepath.Join(t.TempDir(), "tree")
	apply := func(extra ...string) (int, applied, string) {
		args := append(append([]string{"fleet", "apply", "-o", "json", "--cache-dir", "", "--nats", nats.URL, tree}, login...), extra...)
		code, stdout, stderr := fleetCLI(t, reg, args...)
		var a applied
		require.NoError(t, json.Unmarshal([]byte(stdout), &a), "%s\n%s", stdout, stderr)
		return code, a, stderr
	}
	actions := func(a applied) map[string]string {
		out := map[string]string{}
		for _, r := range a.Devices {
			out[r.DeviceID] = r.Action + r.Error
		}
		return out
	}

	fleetTree(t, tree, "1.4.0")
	code, a, stderr := apply("--dry-run", "--exit-code")
	assert.Equal(t, 2, code, "changes pending: %s", stderr)
	code, a, stderr = apply()
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, map[string]string{"dev-1": "create", "dev-2": "create"}, actions(a))
	for _, r := range a.Devices {
		assert.Equal(t, "1.4.0", r.TargetVersion)
	}
	code, again, stderr := apply()
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, map[string]string{"dev-1": "unchanged", "dev-2": "unchanged"}, actions(again), "idempotent")
	assert.Equal(t, a.Devices[0].UUID, again.Devices[0].UUID, "the same declaration, the same attempt")

	// The attempt in the bucket is whole, and so is its OCI artifact.
	code, stdout, stderr := fleetCLI(t, reg, "fleet", "status", "-o", "json", "--nats", nats.URL)
	require.Equal(t, 0, code, stderr)
	var st struct{ Devices []fleet.Status }
	require.NoError(t, json.Unmarshal([]byte(stdout), &st))
	require.Len(t, st.Devices, 2)
	cur := st.Devices[0].Current
	require.NotNil(t, cur)
	assert.Equal(t, "dev-1", cur.Attempt.DeviceID)
	assert.Equal(t, "linux/arm64", cur.Attempt.Artifact.Platform)
	assert.NoError(t, cur.Attempt.Verify(), "the UUID is the one of the content")
	ref, err := name.ParseReference(reg.Host+"/solar/fleet/agent/attempts:"+cur.UUID, name.Insecure)
	require.NoError(t, err)
	img, err := remote.Image(ref, remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password}))
	require.NoError(t, err)
	d, err := img.Digest()
	require.NoError(t, err)
	assert.Equal(t, cur.Digest, d.String(), "the attempt's artifact is the digest the bucket names")

	// What a device does next: download the binary from the attempt's URL
	// (over plain HTTP here: the test registry has no TLS) and check it.
	url := strings.Replace(cur.Attempt.Artifact.URL, "https://", "http://", 1)
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.SetBasicAuth(reg.Username, reg.Password)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	binary, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	sum := sha256.Sum256(binary)
	assert.Equal(t, cur.Attempt.Artifact.Digest, "sha256:"+hex.EncodeToString(sum[:]))
	assert.Equal(t, cur.Attempt.Artifact.Size, int64(len(binary)))
	assert.Equal(t, "#!/bin/sh\necho agent 1.4.0 arm64\n", string(binary), "dev-1 gets the arm64 build of 1.4.0")

	// dev-1 reports rollback-failed: 1.5.0 goes to dev-2 only.
	_, js := nats.Connect(t)
	kv, err := js.KeyValue(context.Background(), "solar-fleet")
	require.NoError(t, err)
	_, err = kv.Put(context.Background(), "state.dev-1", []byte(`{"state":"rollback-failed","step":"start"}`))
	require.NoError(t, err)
	code, stdout, _ = fleetCLI(t, reg, "fleet", "status", "dev-1", "--no-headers", "--nats", nats.URL)
	require.Equal(t, 0, code)
	assert.Regexp(t, `^dev-1 +`+cur.UUID+` +1\.4\.0 +\d+[smh] +rollback-failed at start +\d+s +-\n$`, stdout, "as the device reported it")
	fleetTree(t, tree, "1.5.0")
	code, a, _ = apply()
	assert.Equal(t, 1, code)
	assert.Equal(t, "update", actions(a)["dev-2"], "the other device goes on")
	assert.Contains(t, actions(a)["dev-1"], "rollback-failed")
	code, _, stderr = fleetCLI(t, reg, "fleet", "repair", "dev-1", "--reason", "reflashed by hand", "--nats", nats.URL)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "reflashed by hand", "the repair is logged")
	code, a, stderr = apply()
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, map[string]string{"dev-1": "update", "dev-2": "unchanged"}, actions(a))
}

// TestFleetBadDeviceIDsSendNothing: device ids that cannot be NATS subject
// tokens fail apply with every problem, file and line, exit 1, before any
// request: the "NATS server" is a listener that counts connections, and the
// registry a proxy that counts requests.
func TestFleetBadDeviceIDsSendNothing(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	listener := testenv.StartCountingListener(t)
	tree := t.TempDir()
	var b strings.Builder
	bad := []string{"a.b", "dev*", "dev>", "a b", "..", "dév", ""}
	for i, id := range bad {
		fmt.Fprintf(&b, "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Device\nmetadata: {name: d%d, namespace: fleet}\nspec: {deviceId: %q, platform: linux/arm64}\n", i, id)
	}
	b.WriteString("---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: DeviceUpgrade\nmetadata: {name: u, namespace: fleet}\nspec:\n  agentVersion: 1.4.0\n  artifact: fleet/agent:1.4.0\n  deviceIds: [\"x.y\", \"ok-1\"]\n")
	require.NoError(t, os.WriteFile(filepath.Join(tree, "bad.yaml"), []byte(b.String()), 0o644))
	code, _, stderr := fleetCLI(t, reg, "fleet", "apply", "--cache-dir", "", tree, "--nats", "nats://"+listener.Addr(),
		"--registry", proxy.Host+"/solar", "--plain-http", "--username", reg.Username, "--password-stdin")
	assert.Equal(t, 1, code)
	assert.Equal(t, len(bad)+1, strings.Count(stderr, "must be a device id"), stderr)
	assert.Contains(t, stderr, `bad.yaml:5:8: spec.deviceId: "a.b" must be a device id`)
	assert.Zero(t, listener.Connections(), "no connection to NATS")
	assert.Empty(t, proxy.Take(), "no request to the registry")
}
