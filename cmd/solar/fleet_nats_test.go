package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

// TestFleetNATSLogin: apply and status against a NATS server that requires a
// user, a password ($NATS_PASSWORD) and TLS, as a production one does.
// Without the login, or without trusting its certificate, apply fails with
// exit 1, says why and uploads nothing; with both it creates the attempts,
// and status reads them. The password is never printed.
func TestFleetNATSLogin(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	ns := testenv.StartNATSWith(t, testenv.NATSOptions{Auth: true, TLS: true})
	login := []string{"--registry", proxy.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	code, _, stderr := fleetCLI(t, reg, append(append([]string{"fleet", "push-agent", "--repository", "fleet/agent", "--version", "1.4.0"}, login...), agentFiles(t, "1.4.0")...)...)
	require.Equal(t, 0, code, stderr)
	tree := filepath.Join(t.TempDir(), "tree")
	fleetTree(t, tree, "1.4.0")
	t.Setenv("NATS_PASSWORD", ns.Password)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		code, stdout, stderr := fleetCLI(t, reg, args...)
		assert.NotContains(t, stdout+stderr, ns.Password, "the NATS password is never printed")
		return code, stdout, stderr
	}
	apply := func(nats ...string) (int, string, string) {
		t.Helper()
		proxy.Take()
		return cli(append(append([]string{"fleet", "apply", "-o", "json", "--cache-dir", "", "--nats", ns.URL, tree}, login...), nats...)...)
	}

	for _, c := range []struct {
		nats []string
		why  string
	}{
		{[]string{"--tlsca", ns.CAFile}, "Authorization Violation (log in with --user and $NATS_PASSWORD, --creds or --nkey)"},
		{[]string{"--user", ns.User}, "certificate signed by unknown authority (trust the server's CA with --tlsca)"},
	} {
		code, _, stderr := apply(c.nats...)
		assert.Equal(t, 1, code, "%v", c.nats)
		assert.Contains(t, stderr, c.why, "%v", c.nats)
		assert.Zero(t, countproxy.Writes(proxy.Take()), "%v: nothing uploaded", c.nats)
	}

	code, stdout, stderr := apply("--user", ns.User, "--tlsca", ns.CAFile)
	require.Equal(t, 0, code, stderr)
	var a applied
	require.NoError(t, json.Unmarshal([]byte(stdout), &a), stdout)
	require.Len(t, a.Devices, 2)
	for _, r := range a.Devices {
		assert.Equal(t, "create", r.Action, r.DeviceID)
	}
	code, stdout, stderr = cli("fleet", "status", "-o", "json", "--nats", ns.URL, "--user", ns.User, "--tlsca", ns.CAFile)
	require.Equal(t, 0, code, stderr)
	var st struct{ Devices []fleet.Status }
	require.NoError(t, json.Unmarshal([]byte(stdout), &st), stdout)
	require.Len(t, st.Devices, 2)
	for i, s := range st.Devices {
		require.NotNil(t, s.Current, s.DeviceID)
		assert.Equal(t, a.Devices[i].UUID, s.Current.UUID, s.DeviceID)
	}
}
