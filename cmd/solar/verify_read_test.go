package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// chartLayer is the path of the chart layer of a layout repository's only
// version (its largest blob).
func chartLayer(t *testing.T, repo string) string {
	t.Helper()
	dir := filepath.Join(repo, "blobs", "sha256")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var layer string
	var size int64
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		if info.Size() > size {
			layer, size = e.Name(), info.Size()
		}
	}
	require.NotEmpty(t, layer)
	return filepath.Join(dir, layer)
}

// verify reads every blob of a layout: a chart layer overwritten with as
// many bytes of garbage, or emptied, is named; before, only its presence
// was checked and render kept the bad blob as "unchanged".
func TestVerifyReadsEveryBlob(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := solar(t, "verify", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.Regexp(t, `^verified \d+ repositories, \d+ versions, \d+ blobs \([0-9.]+ KiB read\) in \S+: 0 violations\n`, stderr)

	garbage := chartLayer(t, filepath.Join(out, "beta/beta/release-podinfo"))
	info, err := os.Stat(garbage)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(garbage, make([]byte, info.Size()), 0o600))
	empty := chartLayer(t, filepath.Join(out, "alpha/alpha/release-podinfo-stable"))
	require.NoError(t, os.WriteFile(empty, nil, 0o600))

	code, stdout, stderr = solar(t, "verify", "--out", out)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, "beta/beta/release-podinfo:0.0.1: blob sha256:"+filepath.Base(garbage)+" is damaged: ")
	assert.Contains(t, stdout, "alpha/alpha/release-podinfo-stable:0.0.1: blob sha256:"+filepath.Base(empty)+" is damaged: ")
	assert.Contains(t, stderr, ": 2 violations\n")
}

// Only the tags solar writes pass: a pre-release tag is not 0.0.N.
func TestVerifyNamesTagsSolarDoesNotWrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, out, store.LayoutOptions{})
	require.NoError(t, err)
	repo, err := l.Repository(ctx, "beta/beta/release-podinfo")
	require.NoError(t, err)
	desc, err := repo.Resolve(ctx, "0.0.1")
	require.NoError(t, err)
	require.NoError(t, repo.Tag(ctx, desc, "0.0.1-rc1"))
	require.NoError(t, l.Save(ctx))
	require.NoError(t, l.Close())

	code, stdout, _ := solar(t, "verify", "--out", out)
	assert.Equal(t, 1, code)
	assert.Equal(t, "beta/beta/release-podinfo:0.0.1-rc1: not a version solar writes (0.0.N)\n", stdout)
}

// A mistyped --out or -n finds nothing to verify: exit 1, said, no layout
// created.
func TestVerifyNothingThere(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo")
	code, stdout, stderr := solar(t, "verify", "--out", typo)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "solar: nothing to verify: "+typo+": no solar layout there (check --out)\n", stderr)
	assert.NoDirExists(t, typo)
	for _, dryRun := range []string{"--dry-run", "--dry-run=false"} {
		code, stdout, stderr = solar(t, "gc", "--out", typo, dryRun)
		assert.Equal(t, 1, code)
		assert.Empty(t, stdout)
		assert.Equal(t, "solar: nothing to collect: "+typo+": no solar layout there (check --out)\n", stderr)
		assert.NoDirExists(t, typo, "gc creates no layout")
	}

	out := filepath.Join(dir, "out")
	code, _, stderr = solar(t, "render", "--no-credentials", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = solar(t, "verify", "--out", out, "-n", "gamma")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "solar: nothing to verify: no chart repository in the layout "+out+", namespace gamma (check --out, --registry and -n)\n")
}

// registryBlob is the data file of a blob in the registry's storage.
func registryBlob(reg *testenv.Registry, digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(reg.Storage, "docker/registry/v2/blobs/sha256", hex[:2], hex, "data")
}

// In a registry, verify compares every blob's size by default and hashes
// every blob with --deep; a prefix with nothing under it is said, exit 1.
func TestVerifyRegistry(t *testing.T) {
	needRegistry(t)
	c := registryCLI(t, testenv.RegistryOptions{NoCache: true})
	code, stdout, stderr := c.do(t, "publish", "--no-credentials", "-n", "beta", "-o", "json", "../../examples")
	require.Equal(t, 0, code, stderr)
	require.NotEmpty(t, decodeReport(t, stdout).Targets)
	code, _, stderr = c.do(t, "verify", "--deep")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, ": 0 violations\n")

	reg := c.reg
	layers := map[string]string{}
	for _, name := range []string{"beta/beta/release-podinfo", "beta/bootstrap-plant-2"} {
		r, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
		require.NoError(t, err)
		repo, err := r.Repository(context.Background(), name)
		require.NoError(t, err)
		desc, err := repo.Resolve(context.Background(), "0.0.1")
		require.NoError(t, err)
		var m ocispec.Manifest
		require.NoError(t, json.Unmarshal(must(content.FetchAll(context.Background(), repo, desc)), &m))
		layers[name] = m.Layers[0].Digest.String()
	}
	// Truncated: its size says so. Overwritten with as many bytes: only
	// hashing finds it.
	truncated := registryBlob(reg, layers["beta/beta/release-podinfo"])
	require.NoError(t, os.Truncate(truncated, 10))
	overwritten := registryBlob(reg, layers["beta/bootstrap-plant-2"])
	info, err := os.Stat(overwritten)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(overwritten, make([]byte, info.Size()), 0o600))

	code, stdout, _ = c.do(t, "verify")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "beta/beta/release-podinfo:0.0.1: blob "+layers["beta/beta/release-podinfo"]+" has 10 bytes, its manifest says ")
	assert.NotContains(t, stdout, "beta/bootstrap-plant-2:0.0.1: blob", "the same size: only --deep reads it")
	code, stdout, _ = c.do(t, "verify", "--deep")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "beta/beta/release-podinfo:0.0.1: blob "+layers["beta/beta/release-podinfo"]+" is damaged: ")
	assert.Contains(t, stdout, "beta/bootstrap-plant-2:0.0.1: blob "+layers["beta/bootstrap-plant-2"]+" is damaged: ")

	code, stdout, stderr = fleetCLI(t, reg, "verify", "--registry", reg.Host+"/typo", "--plain-http", "--username", reg.Username, "--password-stdin")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "solar: nothing to verify: no chart repository in "+reg.Host+"/typo (check --out, --registry and -n)\n")
}

// A damaged blob that verify names (issue 44, V1b): render --full reads back
// the blobs of every version it finds unchanged, and writes a damaged or
// missing one again from what it packs (a dry run only says so); verify
// then passes. A chart layer garbled, a config emptied, a manifest removed.
func TestFullRewritesADamagedBlob(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	render := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := solar(t, append([]string{"render", "--no-credentials", "-o", "json", "--out", out}, append(args, "../../examples")...)...)
		require.Equal(t, 0, code, stderr)
		for _, tr := range decodeReport(t, stdout).Targets {
			assert.Equal(t, "0.0.1 unchanged", tr.Version+" "+tr.Action, tr.Name)
		}
		return stderr
	}
	garbage := chartLayer(t, filepath.Join(out, "beta/beta/release-podinfo"))
	info, err := os.Stat(garbage)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(garbage, make([]byte, info.Size()), 0o600))
	desc := func(repo string) ocispec.Descriptor {
		l := mustLayout(t, out)
		defer l.Close()
		r, err := l.Repository(context.Background(), repo)
		require.NoError(t, err)
		d, err := r.Resolve(context.Background(), "0.0.1")
		require.NoError(t, err)
		return d
	}
	blob := func(repo string, d ocispec.Descriptor) string {
		return filepath.Join(out, repo, "blobs", "sha256", d.Digest.Encoded())
	}
	manifest := desc("alpha/bootstrap-edge-2")
	require.NoError(t, os.Remove(blob("alpha/bootstrap-edge-2", manifest)))
	var m ocispec.Manifest
	edge1 := desc("alpha/bootstrap-edge-1")
	require.NoError(t, json.Unmarshal(must(os.ReadFile(blob("alpha/bootstrap-edge-1", edge1))), &m))
	require.NoError(t, os.WriteFile(blob("alpha/bootstrap-edge-1", m.Config), nil, 0o600))
	code, stdout, _ := solar(t, "verify", "--out", out)
	require.Equal(t, 1, code)
	assert.Contains(t, stdout, "beta/beta/release-podinfo:0.0.1: blob sha256:"+filepath.Base(garbage)+" is damaged: ")

	stderr = render("--full", "--dry-run")
	assert.Contains(t, stderr, "damaged or missing: a run without --dry-run writes it again")
	code, _, _ = solar(t, "verify", "--out", out)
	assert.Equal(t, 1, code, "a dry run writes nothing")
	stderr = render("--full")
	for _, d := range []string{filepath.Base(garbage), manifest.Digest.Encoded(), m.Config.Digest.Encoded()} {
		assert.Contains(t, stderr, "sha256:"+d)
	}
	code, stdout, stderr = solar(t, "verify", "--out", out)
	assert.Equal(t, 0, code, "%s%s", stdout, stderr)
}
