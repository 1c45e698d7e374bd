package pipeline

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/resolve"
	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/solar-pipeline/solar/renderer/store"
)

// counting records every write that reaches the repositories of a store.
type counting struct {
	store.Store
	mu     sync.Mutex
	pushed []string // digests
	tagged []string // repository:tag
}

func (c *counting) Repository(ctx context.Context, name string) (store.Repository, error) {
	r, err := c.Store.Repository(ctx, name)
	return &countingRepo{Repository: r, c: c, name: name}, err
}

type countingRepo struct {
	store.Repository
	c    *counting
	name string
}

func (r *countingRepo) Push(ctx context.Context, d ocispec.Descriptor, rd io.Reader) error {
	r.c.mu.Lock()
	r.c.pushed = append(r.c.pushed, d.Digest.String())
	r.c.mu.Unlock()
	return r.Repository.Push(ctx, d, rd)
}

func (r *countingRepo) Tag(ctx context.Context, d ocispec.Descriptor, tag string) error {
	r.c.mu.Lock()
	r.c.tagged = append(r.c.tagged, r.name+":"+tag)
	r.c.mu.Unlock()
	return r.Repository.Tag(ctx, d, tag)
}

// plan is a pipeline plan of a resolved one, without credentials.
func plan(resolved *resolve.Plan) *Plan {
	p := &Plan{}
	for _, t := range resolved.Targets {
		p.Targets = append(p.Targets, &Target{Resolution: t})
	}
	return p
}

func publishTo(t *testing.T, dir string, resolved *resolve.Plan, dryRun bool) (*Report, *counting) {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: dryRun})
	require.NoError(t, err)
	defer l.Close()
	c := &counting{Store: l}
	// One at a time: two identical charts published at once could both find
	// their blobs missing, and the counts would vary.
	r, err := Run(ctx, plan(resolved), c, Options{DryRun: dryRun, PublishOptions: PublishOptions{Concurrency: 1}})
	require.NoError(t, err)
	require.NoError(t, l.Save(ctx))
	return r, c
}

// actions is "repository version action" for every chart of the report, each
// shared release chart once.
func actions(r *Report) []string {
	seen := map[string]bool{}
	var out []string
	add := func(c publish.Result) {
		if !seen[c.Repository] {
			seen[c.Repository] = true
			out = append(out, c.Repository+" "+c.Version+" "+c.Action)
		}
	}
	for _, t := range r.Targets {
		for _, rel := range t.Releases {
			add(*rel.Result)
		}
		add(t.Result)
	}
	sort.Strings(out)
	return out
}

// snapshot lists every file of dir with its size.
func snapshot(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		out[p] = info.Size()
		return err
	})
	if os.IsNotExist(err) {
		return out
	}
	require.NoError(t, err)
	return out
}

func TestRunLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")

	// A dry run on nothing creates nothing.
	r, c := publishTo(t, dir, testenv.ExamplesPlan(t), true)
	assert.NoDirExists(t, dir)
	assert.Empty(t, c.pushed)
	dry := actions(r)

	r, c = publishTo(t, dir, testenv.ExamplesPlan(t), false)
	assert.Equal(t, []string{
		"alpha/alpha/release-metrics 0.0.1 create",
		"alpha/alpha/release-podinfo-canary 0.0.1 create",
		"alpha/alpha/release-podinfo-stable 0.0.1 create",
		"alpha/alpha/release-solar-agent 0.0.1 create",
		"alpha/bootstrap-edge-1 0.0.1 create",
		"alpha/bootstrap-edge-2 0.0.1 create",
		"beta/alpha/release-metrics 0.0.1 create",
		"beta/beta/release-podinfo 0.0.1 create",
		"beta/bootstrap-plant-1 0.0.1 create",
		"beta/bootstrap-plant-2 0.0.1 create",
	}, actions(r))
	assert.Equal(t, dry, actions(r), "the dry run predicted the publish")
	assert.Len(t, c.tagged, 10)
	first := c.pushed
	// One OCI layout per repository: alpha/alpha/release-metrics and
	// beta/alpha/release-metrics, the same chart, each hold its blobs.
	assert.Len(t, first, 3*10, "config, layer and manifest of each chart")
	before := snapshot(t, dir)

	// Unchanged input writes nothing, not even index.json.
	r, c = publishTo(t, dir, testenv.ExamplesPlan(t), false)
	for _, a := range actions(r) {
		assert.Contains(t, a, " 0.0.1 unchanged")
	}
	assert.Empty(t, c.pushed)
	assert.Empty(t, c.tagged)
	assert.Equal(t, before, snapshot(t, dir))

	// One Release changes: its chart and the bootstraps naming it move to 0.0.2.
	changed := testenv.ExamplesPlan(t)
	for _, tp := range changed.Targets {
		for _, sel := range tp.Releases {
			if sel.Release.Name == "podinfo-stable" {
				sel.Release.Spec.Values["replicaCount"] = 3
			}
		}
	}
	r, c = publishTo(t, dir, changed, true)
	assert.Empty(t, c.pushed, "dry run")
	assert.Equal(t, before, snapshot(t, dir), "a dry run writes nothing")
	dry = actions(r)

	r, c = publishTo(t, dir, changed, false)
	assert.Equal(t, []string{
		"alpha/alpha/release-metrics 0.0.1 unchanged",
		"alpha/alpha/release-podinfo-canary 0.0.1 unchanged",
		"alpha/alpha/release-podinfo-stable 0.0.2 update",
		"alpha/alpha/release-solar-agent 0.0.1 unchanged",
		"alpha/bootstrap-edge-1 0.0.2 update",
		"alpha/bootstrap-edge-2 0.0.1 unchanged",
		"beta/alpha/release-metrics 0.0.1 unchanged",
		"beta/beta/release-podinfo 0.0.1 unchanged",
		"beta/bootstrap-plant-1 0.0.1 unchanged",
		"beta/bootstrap-plant-2 0.0.1 unchanged",
	}, actions(r))
	assert.Equal(t, dry, actions(r))
	assert.ElementsMatch(t, []string{"alpha/alpha/release-podinfo-stable:0.0.2", "alpha/bootstrap-edge-1:0.0.2"}, c.tagged)
	for _, d := range c.pushed {
		assert.NotContains(t, first, d, "a blob already stored is never uploaded again")
	}

	// The layout still holds the old versions: Flux may be on them.
	l, err := store.OpenLayout(context.Background(), dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	repo, err := l.Repository(context.Background(), "alpha/bootstrap-edge-1")
	require.NoError(t, err)
	var tags []string
	require.NoError(t, repo.Tags(context.Background(), "", func(ts []string) error { tags = ts; return nil }))
	assert.Equal(t, []string{"0.0.1", "0.0.2"}, tags)
}

func TestRunSkipsFailedTargets(t *testing.T) {
	plan := testenv.ExamplesPlan(t)
	plan.Targets[0].Problems.Errorf("in.yaml", 3, "spec", "broken")
	r, _ := publishTo(t, filepath.Join(t.TempDir(), "out"), plan, false)
	require.Len(t, r.Problems, 1)
	assert.Equal(t, "in.yaml:3: spec: broken", r.Problems[0].String())
	var names []string
	for _, tr := range r.Targets {
		names = append(names, tr.Name)
	}
	assert.Equal(t, []string{"edge-2", "plant-1", "plant-2"}, names)
}

// TestFailsAtDesired: a Target's report Failed at the version before the one
// it was admitted to (the cluster not at the new chart yet) is no verdict on
// the new content (review finding 1.1); Failed or Degraded at the desired
// version is, with helm-controller's digest suffix or without.
func TestFailsAtDesired(t *testing.T) {
	rep := func(phase, reported string) status.Target {
		return status.Target{State: status.Failed, Releases: []status.Release{{Release: "alpha/web", Desired: "0.0.2", Reported: reported, Phase: phase}}}
	}
	assert.False(t, failsAtDesired(rep("Failed", "0.0.1+68ee5879e98f")), "the old version failing")
	assert.True(t, failsAtDesired(rep("Failed", "0.0.2+68ee5879e98f")))
	assert.True(t, failsAtDesired(rep("Degraded", "0.0.2")))
	assert.False(t, failsAtDesired(rep("Ready", "0.0.2")))
}
