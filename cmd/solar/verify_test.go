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
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// TestVerify: a layout solar wrote keeps its promises; a lost release chart
// version and a lost blob are each named, exit 1.
func TestVerify(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := solar(t, "verify", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)

	require.NoError(t, os.WriteFile(filepath.Join(out, "alpha/alpha/release-podinfo-stable/index.json"), []byte(`{"schemaVersion":2,"manifests":[]}`), 0o600))
	blobs := filepath.Join(out, "beta/beta/release-podinfo/blobs/sha256")
	entries, err := os.ReadDir(blobs)
	require.NoError(t, err)
	var layer string
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		if info.Size() > 1000 { // the chart layer, not the manifest or config
			layer = e.Name()
		}
	}
	require.NotEmpty(t, layer)
	require.NoError(t, os.Remove(filepath.Join(blobs, layer)))

	code, stdout, _ = solar(t, "verify", "--out", out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "alpha/bootstrap-edge-1:0.0.1: names alpha/alpha/release-podinfo-stable at 0.0.1, which the store does not have\n")
	assert.Contains(t, stdout, "beta/beta/release-podinfo:0.0.1: blob sha256:"+layer+" is missing\n")
	code, stdout, _ = solar(t, "verify", "--out", out, "-n", "beta", "-o", "json")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, `"repository": "beta/beta/release-podinfo"`)
	assert.NotContains(t, stdout, "alpha/", "-n beta verifies beta only")
}

// TestUntaggedRepository: a run killed after its first blob upload leaves a
// repository the registry's catalog lists but whose tags it answers 404 for.
// verify, gc and publish take it as a repository without versions. (The
// Distribution registry v3's catalog does not list it: verify and gc find
// nothing there, and say so.)
func TestUntaggedRepository(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	ctx := context.Background()
	r, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	repo, err := r.Repository(ctx, "alpha/bootstrap-edge-1")
	require.NoError(t, err)
	blob := []byte("a layer whose manifest never came")
	require.NoError(t, repo.Push(ctx, content.NewDescriptorFromBytes("application/octet-stream", blob), bytes.NewReader(blob)))
	tags, err := store.Tags(ctx, repo)
	require.NoError(t, err)
	assert.Empty(t, tags)

	login := []string{"--registry", reg.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	for _, step := range []struct {
		args []string
		code int
	}{
		{[]string{"verify"}, 1},
		{[]string{"gc", "--dry-run"}, 1},
		{[]string{"publish", "--no-credentials", "../../examples"}, 0},
		{[]string{"verify"}, 0},
		{[]string{"gc", "--dry-run"}, 0},
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, append(step.args, login...), strings.NewReader(reg.Password+"\n"), &stdout, &stderr)
		assert.Equal(t, step.code, code, "%v: %s", step.args, stderr.String())
		if step.code == 1 {
			assert.Contains(t, stderr.String(), ": no chart repository in "+reg.Host+"/solar (check --out, --registry and -n)\n")
		}
	}
}
