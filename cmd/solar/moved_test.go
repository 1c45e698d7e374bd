package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// TestVerifyRegistryRefusesMovedCharts (S1, solar verify --registry --key):
// what anyone who may push can do without the key, on the registry: copy
// edge-1's signed bootstrap chart with its signature as edge-2's next
// version (a transplant: edge-2's cluster would install edge-1's chart and
// token), and tag edge-1's first version above its newest (a rollback).
// The signatures still verify the digests, as Flux checks them; verify
// --key names both as violations, with what each signature was made for.
func TestVerifyRegistryRefusesMovedCharts(t *testing.T) {
	needRegistry(t)
	ctx := context.Background()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	dir := t.TempDir()
	key, pub := writeKey(t, dir, "solar")
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args = append(args, "--username", reg.Username, "--password-stdin", "--plain-http", "--registry", reg.Host+"/solar")
		code := run(ctx, args, strings.NewReader(reg.Password+"\n"), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, _, stderr := cli("publish", "--no-credentials", "-n", "alpha", "--signing-key", key, examples)
	require.Equal(t, 0, code, stderr)
	releases := filepath.Join(examples, "alpha", "releases.yaml")
	b, err := os.ReadFile(releases)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(releases, bytes.Replace(b, []byte("replicaCount: 2"), []byte("replicaCount: 3"), 1), 0o644))
	code, _, stderr = cli("publish", "--no-credentials", "-n", "alpha", "--signing-key", key, examples)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = cli("verify", "--key", pub)
	require.Equal(t, 0, code, stderr)

	store, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	edge1, err := store.Repository(ctx, "alpha/bootstrap-edge-1")
	require.NoError(t, err)
	edge2, err := store.Repository(ctx, "alpha/bootstrap-edge-2")
	require.NoError(t, err)
	// ExtendedCopy copies the chart with its referrers: its signatures.
	_, err = oras.ExtendedCopy(ctx, edge1.(oras.ReadOnlyGraphTarget), "0.0.2", edge2, "0.0.2", oras.DefaultExtendedCopyOptions)
	require.NoError(t, err)
	old, err := edge1.Resolve(ctx, "0.0.1")
	require.NoError(t, err)
	require.NoError(t, edge1.Tag(ctx, old, "0.0.3"))

	code, stdout, _ := cli("verify", "--key", pub)
	assert.Equal(t, 1, code)
	const bad = ": no signature verifies with the keys given: signed for another repository or version: "
	assert.Contains(t, stdout, "alpha/bootstrap-edge-2:0.0.2"+bad+"alpha/bootstrap-edge-1:0.0.2")
	assert.Contains(t, stdout, "alpha/bootstrap-edge-1:0.0.3"+bad+"alpha/bootstrap-edge-1:0.0.1")
}
