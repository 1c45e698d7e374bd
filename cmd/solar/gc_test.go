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
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// countFiles counts the files below dir.
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	}))
	return n
}

// changeRelease bumps podinfo-stable's replicaCount in a copy of examples/.
func changeRelease(t *testing.T, examples string, from, to string) {
	t.Helper()
	p := filepath.Join(examples, "alpha", "releases.yaml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, bytes.Replace(b, []byte("replicaCount: "+from), []byte("replicaCount: "+to), 1), 0o644))
}

func TestGCLayout(t *testing.T) {
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	out := filepath.Join(dir, "out")
	for i, n := range []string{"2", "3", "4"} {
		if i > 0 {
			changeRelease(t, examples, []string{"2", "3", "4"}[i-1], n)
		}
		code, _, stderr := solar(t, "render", "--no-credentials", "--out", out, examples)
		require.Equal(t, 0, code, stderr)
	}
	// The fleet's agent binaries beside the charts: an index, not solar's
	// chart; gc leaves it whole.
	for _, v := range []string{"1.4.0", "1.5.0"} {
		code, _, stderr := solar(t, append([]string{"fleet", "push-agent", "--out", out, "--repository", "fleet/agent", "--version", v}, agentFiles(t, v)...)...)
		require.Equal(t, 0, code, stderr)
	}
	agent := countFiles(t, filepath.Join(out, "fleet", "agent"))
	require.NoError(t, os.MkdirAll(filepath.Join(out, "alpha", "bootstrap-edge-1", "ingest"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(out, "alpha", "bootstrap-edge-1", "ingest", "leftover"), []byte("a killed run's"), 0o600))
	blobs := countFiles(t, out)
	index := string(must(os.ReadFile(filepath.Join(out, "alpha", "bootstrap-edge-1", "index.json"))))

	code, stdout, stderr := solar(t, "gc", "--out", out, "--keep", "1", "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "would remove alpha/bootstrap-edge-1:0.0.1\n")
	assert.Contains(t, stdout, "would remove alpha/bootstrap-edge-1:0.0.2\n")
	assert.Equal(t, blobs, countFiles(t, out), "a dry run removes nothing")
	assert.Equal(t, index, string(must(os.ReadFile(filepath.Join(out, "alpha", "bootstrap-edge-1", "index.json")))))

	code, stdout, stderr = solar(t, "gc", "--out", out, "--keep", "1")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "removed 4 versions, ", "the summary is conversation")
	assert.Contains(t, stderr, "left 1 repository alone, not solar's charts: fleet/agent\n")
	assert.Equal(t, agent, countFiles(t, filepath.Join(out, "fleet", "agent")), "the agent binaries are left whole")
	code, stdout, stderr = solar(t, "verify", "--out", out)
	assert.Equal(t, 0, code, stdout)
	assert.Contains(t, stderr, "\nnot checked, not solar's charts: fleet/agent\n")
	assert.Less(t, countFiles(t, out), blobs)
	assert.NoFileExists(t, filepath.Join(out, "alpha", "bootstrap-edge-1", "ingest", "leftover"))
	assert.NotContains(t, string(must(os.ReadFile(filepath.Join(out, "alpha", "bootstrap-edge-1", "index.json")))), `"0.0.1"`)

	// What was kept is whole: the next render finds every chart unchanged.
	code, stdout, stderr = solar(t, "render", "--no-credentials", "--dry-run", "-o", "json", "--out", out, examples)
	require.Equal(t, 0, code, stderr)
	for _, tr := range decodeReport(t, stdout).Targets {
		assert.Equal(t, "unchanged", tr.Action, tr.Name)
	}
	code, _, stderr = solar(t, "gc", "--out", out, "--keep", "0")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "keep at least 1 version")
}

func TestGCRegistry(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	for i, n := range []string{"2", "3"} {
		if i > 0 {
			changeRelease(t, examples, "2", n)
		}
		code, _, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", reg.Host+"/solar", "-n", "alpha", examples)
		require.Equal(t, 0, code, stderr)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"gc", "--registry", reg.Host + "/solar", "--plain-http", "-n", "alpha", "--keep", "1",
		"--username", reg.Username, "--password-stdin"}, strings.NewReader(reg.Password), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "removed alpha/bootstrap-edge-1:0.0.1\n")
	assert.Contains(t, stdout.String(), "removed alpha/alpha/release-podinfo-stable:0.0.1\n")

	// Without -n, every repository under the prefix: the fleet's agent
	// versions are not chart versions and stay.
	for _, v := range []string{"1.4.0", "1.5.0"} {
		code, _, stderr := fleetCLI(t, reg, append([]string{"fleet", "push-agent", "--registry", reg.Host + "/solar", "--plain-http",
			"--username", reg.Username, "--password-stdin", "--repository", "fleet/agent", "--version", v}, agentFiles(t, v)...)...)
		require.Equal(t, 0, code, stderr)
	}
	stdout.Reset()
	code = run(context.Background(), []string{"gc", "--registry", reg.Host + "/solar", "--plain-http", "--keep", "1", "-o", "json",
		"--username", reg.Username, "--password-stdin"}, strings.NewReader(reg.Password), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), `"skipped": [
    "fleet/agent"
  ]`)
	assert.NotContains(t, stdout.String(), "fleet/agent:")

	repo, err := remote.NewRepository(reg.Host + "/solar/alpha/bootstrap-edge-1")
	require.NoError(t, err)
	repo.PlainHTTP = true
	repo.Client = &auth.Client{Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: reg.Username, Password: reg.Password})}
	var tags []string
	require.NoError(t, repo.Tags(context.Background(), "", func(ts []string) error { tags = append(tags, ts...); return nil }))
	assert.Equal(t, []string{"0.0.2"}, tags, "the newest version stays")
	agent, err := remote.NewRepository(reg.Host + "/solar/fleet/agent")
	require.NoError(t, err)
	agent.PlainHTTP, agent.Client = true, repo.Client
	tags = nil
	require.NoError(t, agent.Tags(context.Background(), "", func(ts []string) error { tags = append(tags, ts...); return nil }))
	assert.Equal(t, []string{"1.4.0", "1.5.0"}, tags, "the agent's versions stay")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestGCRewritesTheIndex: a version tagged by hand (not by solar) leaves the
// namespace index naming an older version, which verify reports; gc --keep 1
// removes that older version and its entry, after which verify passes and
// the next render asks the repository, finds the hand-tagged version, and
// publishes past it.
func TestGCRewritesTheIndex(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := solar(t, "render", "--no-credentials", "-n", "beta", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, out, store.LayoutOptions{})
	require.NoError(t, err)
	repo, err := l.Repository(ctx, "beta/bootstrap-plant-1")
	require.NoError(t, err)
	desc, err := repo.Resolve(ctx, "0.0.1")
	require.NoError(t, err)
	require.NoError(t, repo.Tag(ctx, desc, "0.0.2"), "the same chart, tagged by hand")
	require.NoError(t, l.Save(ctx))
	require.NoError(t, l.Close())

	code, stdout, _ := solar(t, "verify", "--out", out)
	assert.Equal(t, 1, code)
	assert.Regexp(t, `beta/solar-index:0\.0\.\d+: beta/bootstrap-plant-1: the index names 0.0.1, but the newest version is 0.0.2`, stdout)
	code, stdout, stderr = solar(t, "gc", "--out", out, "--keep", "1")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "removed beta/bootstrap-plant-1:0.0.1\n")
	code, stdout, stderr = solar(t, "verify", "--out", out)
	assert.Equal(t, 0, code, "the entry went with its version: %s%s", stdout, stderr)

	code, stdout, stderr = solar(t, "render", "--no-credentials", "-n", "beta", "-o", "json", "--out", out, "../../examples")
	require.Equal(t, 0, code, stderr)
	for _, tr := range decodeReport(t, stdout).Targets {
		if tr.Name != "plant-1" {
			assert.Equal(t, "unchanged", tr.Action, tr.Name)
			continue
		}
		// Asked the full way: the hand-tagged 0.0.2 is the newest, and
		// its Chart.yaml says 0.0.1, not what solar packs at 0.0.2.
		assert.Equal(t, "update", tr.Action)
		assert.Equal(t, "0.0.3", tr.Version)
	}
	ix, err := publish.ReadIndex(ctx, mustLayout(t, out), "beta", nil)
	require.NoError(t, err)
	assert.Equal(t, "0.0.3", ix.Repositories["beta/bootstrap-plant-1"].Version, "indexed again")
}

// mustLayout opens the layout dir read-only for the test.
func mustLayout(t *testing.T, dir string) *store.Layout {
	t.Helper()
	l, err := store.OpenLayout(context.Background(), dir, store.LayoutOptions{ReadOnly: true, MustExist: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}
