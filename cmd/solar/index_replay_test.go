package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// replayStore is where TestIndexReplay runs: its solar verb and flags, and
// the store itself, opened for the writer without the key.
type replayStore struct {
	// cli runs solar's verb with the store's flags and args.
	cli func(t *testing.T, args ...string) (int, string, string)
	// verb renders or publishes; exitCode: it takes --exit-code.
	verb     string
	exitCode bool
	open     func(t *testing.T) (store.Store, func())
}

// replays are the ways to put index v1 back without the key: under the tag
// index, under a higher version, over the newest version.
var replays = []struct {
	name string
	tag  func(newest string) string
}{
	{"the index tag moved back", func(string) string { return publish.IndexTag }},
	{"under a higher version", func(string) string { return "0.0.99" }},
	{"over the newest version", func(newest string) string { return newest }},
}

// TestIndexReplay is issue 44's I1: index v1 says the release chart's 0.0.1
// holds content A; a signing run publishes B as 0.0.2 and index v2; the
// input goes back to A; someone who may push but has no key puts index v1
// back. A signing run must not trust v1's entry (0.0.1 = A, "unchanged",
// while the repository's newest, what Flux installs, is 0.0.2 = B): it
// publishes A as 0.0.3 and writes an index that the next run trusts.
func TestIndexReplay(t *testing.T) {
	for _, replay := range replays {
		t.Run(replay.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			testIndexReplay(t, replayStore{
				verb: "render",
				cli: func(t *testing.T, args ...string) (int, string, string) {
					return solar(t, append([]string{args[0], "--out", out}, args[1:]...)...)
				},
				open: func(t *testing.T) (store.Store, func()) {
					l, err := store.OpenLayout(context.Background(), out, store.LayoutOptions{})
					require.NoError(t, err)
					return l, func() { require.NoError(t, l.Save(context.Background())); require.NoError(t, l.Close()) }
				},
			}, replay.tag)
		})
	}
}

// TestIndexReplayRegistry is TestIndexReplay on a real registry, with
// publish --dry-run --exit-code.
func TestIndexReplayRegistry(t *testing.T) {
	needRegistry(t)
	for _, replay := range replays {
		t.Run(replay.name, func(t *testing.T) {
			reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
			testIndexReplay(t, replayStore{
				verb: "publish", exitCode: true,
				cli: func(t *testing.T, args ...string) (int, string, string) {
					var stdout, stderr bytes.Buffer
					args = append(args, "--username", reg.Username, "--password-stdin", "--plain-http", "--registry", reg.Host+"/solar")
					code := run(context.Background(), args, strings.NewReader(reg.Password+"\n"), &stdout, &stderr)
					return code, stdout.String(), stderr.String()
				},
				open: func(t *testing.T) (store.Store, func()) {
					r, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
					require.NoError(t, err)
					return r, func() {}
				},
			}, replay.tag)
		})
	}
}

func testIndexReplay(t *testing.T, st replayStore, tag func(newest string) string) {
	const chart = "alpha/alpha/release-podinfo-stable"
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	key, _ := writeKey(t, dir, "solar")
	publish := func(args ...string) (int, pipeline.Report) {
		t.Helper()
		args = append([]string{st.verb, "--no-credentials", "-n", "alpha", "-o", "json", "--signing-key", key}, append(args, examples)...)
		code, stdout, stderr := st.cli(t, args...)
		require.NotEqual(t, 1, code, stderr)
		return code, decodeReport(t, stdout)
	}
	publish()
	v1 := indexManifest(t, st)
	changeRelease(t, examples, "2", "3")
	publish() // 0.0.2 = B, index v2
	changeRelease(t, examples, "3", "2")
	replayIndex(t, st, v1, tag)

	if st.exitCode {
		code, dry := publish("--dry-run", "--exit-code")
		assert.Equal(t, 2, code, "a change is pending")
		assert.Equal(t, "0.0.3 update", releaseAction(dry, chart), "not 0.0.1 unchanged, as the replayed index says")
	}
	_, dry := publish("--dry-run")
	assert.Equal(t, "0.0.3 update", releaseAction(dry, chart), "not 0.0.1 unchanged, as the replayed index says")
	_, wet := publish()
	assert.Equal(t, "0.0.3 update", releaseAction(wet, chart))
	code, stdout, stderr := st.cli(t, "verify")
	assert.Equal(t, 0, code, "%s%s", stdout, stderr)
	_, again := publish()
	assert.Equal(t, "0.0.3 unchanged", releaseAction(again, chart), "the index written anew is trusted")
}

// releaseAction is "version action" of a release chart in a report.
func releaseAction(r pipeline.Report, repo string) string {
	for _, tr := range r.Targets {
		for _, rel := range tr.Releases {
			if rel.Repository == repo {
				return rel.Version + " " + rel.Action
			}
		}
	}
	return ""
}

// indexManifest is the manifest of alpha's index as it is now.
func indexManifest(t *testing.T, st replayStore) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	store, done := st.open(t)
	defer done()
	repo, err := store.Repository(ctx, publish.IndexRepository("alpha"))
	require.NoError(t, err)
	desc, err := repo.Resolve(ctx, publish.IndexTag)
	require.NoError(t, err)
	return desc
}

// replayIndex tags the index manifest desc, still in the store, as what
// tag gives of alpha's index repository's newest version: what a writer
// without the key can do.
func replayIndex(t *testing.T, st replayStore, desc ocispec.Descriptor, tag func(newest string) string) {
	t.Helper()
	ctx := context.Background()
	store, done := st.open(t)
	defer done()
	repo, err := store.Repository(ctx, publish.IndexRepository("alpha"))
	require.NoError(t, err)
	newest, err := publish.Newest(ctx, repo)
	require.NoError(t, err)
	require.NoError(t, repo.Tag(ctx, desc, tag(newest)))
}
