package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/resolve"
	"github.com/solar-pipeline/solar/renderer/store"
)

// runIndexed runs the plan into the layout dir, which keeps namespace
// indexes (a store that wraps it keeps none), and returns the report and
// what the run logged.
func runIndexed(t *testing.T, dir string, resolved *resolve.Plan, opts Options) (*Report, string) {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	var logs bytes.Buffer
	opts.Log = slog.New(slog.NewTextHandler(&logs, nil))
	r, err := Run(ctx, plan(resolved), l, opts)
	require.NoError(t, err, "%s", logs.String())
	require.NoError(t, l.Save(ctx))
	return r, logs.String()
}

// readIndex reads namespace ns's index of the layout dir.
func readIndex(t *testing.T, dir, ns string) (*publish.Index, error) {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	return publish.ReadIndex(ctx, l, ns, nil)
}

// changedPlan is the examples' plan with podinfo-stable's values changed.
func changedPlan(t *testing.T) *resolve.Plan {
	p := testenv.ExamplesPlan(t)
	for _, tp := range p.Targets {
		for _, sel := range tp.Releases {
			if sel.Release.Name == "podinfo-stable" {
				sel.Release.Spec.Values["replicaCount"] = 3
			}
		}
	}
	return p
}

// A dry run removes no index entry: the removal before a push is a write
// (issue 44, PD1). The layout is open writable, as a registry is.
func TestRunDryRunKeepsTheIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	runIndexed(t, dir, testenv.ExamplesPlan(t), Options{})
	before, err := readIndex(t, dir, "alpha")
	require.NoError(t, err)
	require.Contains(t, before.Repositories, "alpha/alpha/release-podinfo-stable")
	files := snapshot(t, dir)

	r, _ := runIndexed(t, dir, changedPlan(t), Options{DryRun: true})
	assert.Contains(t, actions(r), "alpha/alpha/release-podinfo-stable 0.0.2 update")
	after, err := readIndex(t, dir, "alpha")
	require.NoError(t, err)
	assert.Equal(t, before, after, "the dry run wrote no index")
	assert.Equal(t, files, snapshot(t, dir), "nor anything else")
}

// --full trusts no index (issue 44, PI1): a version tagged by hand after
// the one the index names, which the input's content matches, is found,
// and the input is published past it; a run that trusts the index does not
// see it (docs/index.md, "What the index can miss").
func TestRunFullTrustsNoIndex(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	runIndexed(t, dir, testenv.ExamplesPlan(t), Options{})
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
	require.NoError(t, err)
	repo, err := l.Repository(ctx, "beta/beta/release-podinfo")
	require.NoError(t, err)
	desc, err := repo.Resolve(ctx, "0.0.1")
	require.NoError(t, err)
	require.NoError(t, repo.Tag(ctx, desc, "0.0.2"), "the same chart, tagged by hand")
	require.NoError(t, l.Save(ctx))
	require.NoError(t, l.Close())

	r, _ := runIndexed(t, dir, testenv.ExamplesPlan(t), Options{DryRun: true})
	assert.Contains(t, actions(r), "beta/beta/release-podinfo 0.0.1 unchanged", "the index is trusted")
	r, _ = runIndexed(t, dir, testenv.ExamplesPlan(t), Options{DryRun: true, PublishOptions: PublishOptions{Full: true}})
	assert.Contains(t, actions(r), "beta/beta/release-podinfo 0.0.3 update", "its Chart.yaml says 0.0.1, not what solar packs at 0.0.2")
}

// An index that a writer without the key may leave (another namespace's
// repositories, an entry without a version, no version at all, a layer over
// 64 MiB, a damaged one, an older index under a newer version) is left
// aside with a warning, never fails the run, and is replaced by one that
// holds (issue 44, PI2).
func TestRunLeavesAHostileIndexAside(t *testing.T) {
	body := func(ix publish.Index) []byte {
		b, err := json.Marshal(map[string]any{"index": ix})
		require.NoError(t, err)
		return b
	}
	for _, hostile := range []struct {
		name  string
		write func(t *testing.T, dir string, repo store.Repository, next string, prev *publish.Index)
		// onDisk: write is called on the layout's files, once it is closed.
		onDisk bool
	}{
		{"another namespace's repository", func(t *testing.T, _ string, repo store.Repository, next string, prev *publish.Index) {
			ix := publish.Index{Schema: 2, Namespace: "alpha", Version: next, Repositories: map[string]publish.Entry{"beta/bootstrap-plant-1": prev.Repositories["alpha/bootstrap-edge-1"]}}
			putIndexLayer(t, repo, next, body(ix), 0)
		}, false},
		{"an entry without a version", func(t *testing.T, _ string, repo store.Repository, next string, prev *publish.Index) {
			e := prev.Repositories["alpha/bootstrap-edge-1"]
			e.Version = ""
			ix := publish.Index{Schema: 2, Namespace: "alpha", Version: next, Repositories: map[string]publish.Entry{"alpha/bootstrap-edge-1": e}}
			putIndexLayer(t, repo, next, body(ix), 0)
		}, false},
		{"no version", func(t *testing.T, dir string, _ store.Repository, _ string, _ *publish.Index) {
			// As an older solar left it: its one tag, index.
			p := filepath.Join(dir, "alpha", "solar-index", "index.json")
			var index ocispec.Index
			require.NoError(t, json.Unmarshal(must(os.ReadFile(p)), &index))
			var kept []ocispec.Descriptor
			for _, d := range index.Manifests {
				if d.Annotations[ocispec.AnnotationRefName] == publish.IndexTag {
					kept = append(kept, d)
				}
			}
			require.Len(t, kept, 1)
			index.Manifests = kept
			require.NoError(t, os.WriteFile(p, must(json.Marshal(index)), 0o600))
		}, true},
		{"over 64 MiB", func(t *testing.T, _ string, repo store.Repository, next string, _ *publish.Index) {
			putIndexLayer(t, repo, next, []byte("{}"), 64<<20+1)
		}, false},
		{"not an index", func(t *testing.T, _ string, repo store.Repository, next string, _ *publish.Index) {
			putIndexLayer(t, repo, next, []byte("not json"), 0)
		}, false},
		{"a blob damaged", func(t *testing.T, dir string, repo store.Repository, next string, prev *publish.Index) {
			ix := publish.Index{Schema: 2, Namespace: "alpha", Version: next, Repositories: map[string]publish.Entry{}}
			layer := putIndexLayer(t, repo, next, body(ix), 0)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "alpha", "solar-index", "blobs", "sha256", layer.Digest.Encoded()),
				bytes.Repeat([]byte{' '}, int(layer.Size)), 0o600))
		}, false},
		{"an older index under a newer version", func(t *testing.T, _ string, repo store.Repository, next string, prev *publish.Index) {
			putIndexLayer(t, repo, next, body(*prev), 0)
		}, false},
	} {
		t.Run(hostile.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "out")
			runIndexed(t, dir, testenv.ExamplesPlan(t), Options{})
			prev, err := readIndex(t, dir, "alpha")
			require.NoError(t, err)
			l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
			require.NoError(t, err)
			repo, err := l.Repository(ctx, publish.IndexRepository("alpha"))
			require.NoError(t, err)
			newest, err := publish.Newest(ctx, repo)
			require.NoError(t, err)
			next := semver.MustParse(newest).IncPatch().String()
			if !hostile.onDisk {
				hostile.write(t, dir, repo, next, prev)
			}
			require.NoError(t, l.Save(ctx))
			require.NoError(t, l.Close())
			if hostile.onDisk {
				hostile.write(t, dir, nil, next, prev)
			}
			_, err = readIndex(t, dir, "alpha")
			require.ErrorIs(t, err, publish.ErrIndex)

			r, logs := runIndexed(t, dir, testenv.ExamplesPlan(t), Options{})
			for _, a := range actions(r) {
				assert.Contains(t, a, " 0.0.1 unchanged")
			}
			assert.Contains(t, logs, "the namespace's index is left aside")
			ix, err := readIndex(t, dir, "alpha")
			require.NoError(t, err, "replaced")
			assert.Contains(t, ix.Repositories, "alpha/bootstrap-edge-1")
			assert.NotContains(t, ix.Repositories, "beta/bootstrap-plant-1")
		})
	}
}

// putIndexLayer writes into repo, under tag, an index manifest of one
// layer, b; with size, the manifest says the layer has that many bytes
// (and the layer is not written).
func putIndexLayer(t *testing.T, repo store.Repository, tag string, b []byte, size int64) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	layer := content.NewDescriptorFromBytes(api.MediaTypeIndex, b)
	if size > 0 {
		layer.Size = size
	} else if err := repo.Push(ctx, layer, bytes.NewReader(b)); err != nil {
		require.ErrorContains(t, err, "already exists")
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, api.ArtifactTypeIndex,
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	require.NoError(t, err)
	require.NoError(t, repo.Tag(ctx, desc, tag))
	return layer
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
