package publish

import (
	"bytes"
	"errors"
	"fmt"

	"context"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/store"
)

// textJob is an artifact that is not a chart: one text layer, the version in
// the config, as a chart's Chart.yaml carries it.
func textJob(repo, text string) Job {
	return Job{Repository: repo, Pack: func(version string) (*Artifact, error) {
		return &Artifact{
			Config:      NewBlob("application/vnd.example.config.v1+json", []byte(`{"version":"`+version+`"}`)),
			Layers:      []Blob{NewBlob("text/plain", []byte(text))},
			Annotations: map[string]string{"org.opencontainers.image.version": version},
		}, nil
	}}
}

func publishJobs(t *testing.T, dir string, dryRun bool, jobs ...Job) []string {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: dryRun})
	require.NoError(t, err)
	defer l.Close()
	results, err := Publish(ctx, l, jobs, Options{DryRun: dryRun})
	require.NoError(t, err)
	require.NoError(t, l.Save(ctx))
	var out []string
	for _, r := range results {
		out = append(out, r.Repository+" "+r.Version+" "+r.Action)
	}
	return out
}

// TestPublishAnyContent: versions rise exactly when the layers change, for
// any kind of artifact; a dry run predicts and writes nothing.
func TestPublishAnyContent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	assert.Equal(t, []string{"a/one 0.0.1 create", "a/two 0.0.1 create"},
		publishJobs(t, dir, true, textJob("a/one", "hello"), textJob("a/two", "world")))
	assert.NoDirExists(t, dir, "a dry run creates nothing")

	assert.Equal(t, []string{"a/one 0.0.1 create", "a/two 0.0.1 create"},
		publishJobs(t, dir, false, textJob("a/one", "hello"), textJob("a/two", "world")))
	assert.Equal(t, []string{"a/one 0.0.1 unchanged", "a/two 0.0.1 unchanged"},
		publishJobs(t, dir, false, textJob("a/one", "hello"), textJob("a/two", "world")),
		"the config differs per version; only the layers decide")
	assert.Equal(t, []string{"a/one 0.0.1 unchanged", "a/two 0.0.2 update"},
		publishJobs(t, dir, false, textJob("a/one", "hello"), textJob("a/two", "world!")))
	assert.Equal(t, []string{"a/two 0.0.3 update"}, publishJobs(t, dir, false, textJob("a/two", "hello")),
		"content an older version had still gets a new version: versions only rise")
}

// TestLatestVersionIsTheHighest: versions compare as semver, not as text,
// and tags that are no version are not versions.
func TestLatestVersionIsTheHighest(t *testing.T) {
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	repo, err := l.Repository(ctx, "a/b")
	require.NoError(t, err)
	art, err := textJob("a/b", "x").Pack("0.0.1")
	require.NoError(t, err)
	staged, manifest, err := stage(ctx, art)
	require.NoError(t, err)
	for _, tag := range []string{"0.0.2", "0.0.10", "0.0.9", "latest", "v0.0.99"} {
		require.NoError(t, push(ctx, staged, repo, manifest, tag, true))
	}
	v, err := latestVersion(ctx, repo)
	require.NoError(t, err)
	assert.Equal(t, "0.0.10", v.Original())
	results, err := Publish(ctx, l, []Job{textJob("a/b", "y")}, Options{})
	require.NoError(t, err)
	assert.Equal(t, "0.0.11", results[0].Version, "the next version after the highest")
}

// overwriting is a store whose first tag is overwritten by "another writer"
// right after it is pushed, before Publish confirms it.
type overwriting struct {
	*store.Layout
	done bool
}

func (o *overwriting) Repository(ctx context.Context, name string) (store.Repository, error) {
	r, err := o.Layout.Repository(ctx, name)
	return &overwritingRepo{Repository: r, o: o}, err
}

type overwritingRepo struct {
	store.Repository
	o *overwriting
}

func (r *overwritingRepo) Tag(ctx context.Context, d ocispec.Descriptor, tag string) error {
	if err := r.Repository.Tag(ctx, d, tag); err != nil || r.o.done {
		return err
	}
	r.o.done = true
	return otherWriter(ctx, r.Repository, tag)
}

// otherWriter publishes another writer's content of a/b at tag into repo.
func otherWriter(ctx context.Context, repo store.Repository, tag string) error {
	other, err := textJob("a/b", "the other writer's").Pack(tag)
	if err != nil {
		return err
	}
	staged, manifest, err := stage(ctx, other)
	if err != nil {
		return err
	}
	b, err := content.FetchAll(ctx, staged, manifest)
	if err != nil {
		return err
	}
	for _, blob := range append([]Blob{other.Config, {Desc: manifest, Data: b}}, other.Layers...) {
		if err := repo.Push(ctx, blob.Desc, bytes.NewReader(blob.Data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return err
		}
	}
	return repo.Tag(ctx, manifest, tag)
}

// tagging is a store in which another writer is tagging 0.0.1 of a/b: the
// tag is listed before it resolves (as a registry lists a tag before its
// manifest resolves), twice, and then it is the other writer's.
type tagging struct {
	*store.Layout
	misses int
}

func (s *tagging) Repository(ctx context.Context, name string) (store.Repository, error) {
	r, err := s.Layout.Repository(ctx, name)
	return &taggingRepo{Repository: r, s: s}, err
}

type taggingRepo struct {
	store.Repository
	s *tagging
}

func (r *taggingRepo) Tags(ctx context.Context, last string, fn func([]string) error) error {
	if r.s.misses < 2 {
		return fn([]string{"0.0.1"})
	}
	return r.Repository.Tags(ctx, last, fn)
}

func (r *taggingRepo) Resolve(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	if ref == "0.0.1" && r.s.misses < 2 {
		if r.s.misses++; r.s.misses == 2 {
			if err := otherWriter(ctx, r.Repository, ref); err != nil {
				return ocispec.Descriptor{}, err
			}
		}
		return ocispec.Descriptor{}, fmt.Errorf("%s: %w", ref, errdef.ErrNotFound)
	}
	return r.Repository.Resolve(ctx, ref)
}

// TestPublishWaitsForATagBeingWritten: a version listed that does not resolve
// yet is another writer's, being tagged: Publish looks again instead of
// failing, and publishes after it.
func TestPublishWaitsForATagBeingWritten(t *testing.T) {
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	store := &tagging{Layout: l}
	results, err := Publish(ctx, store, []Job{textJob("a/b", "mine")}, Options{})
	require.NoError(t, err)
	assert.Equal(t, 2, store.misses)
	assert.Equal(t, "0.0.2", results[0].Version, "after the other writer's 0.0.1")
	assert.Equal(t, Update, results[0].Action)
}

// TestPublishRepublishesAnOverwrittenTag drives the two-writer path
// deterministically: another writer rebinds the tag between push and
// confirm; Publish sees it and publishes again at the next version.
func TestPublishRepublishesAnOverwrittenTag(t *testing.T) {
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	store := &overwriting{Layout: l}
	results, err := Publish(ctx, store, []Job{textJob("a/b", "mine")}, Options{})
	require.NoError(t, err)
	assert.Equal(t, "0.0.2", results[0].Version, "published again at the next version")
	assert.Equal(t, Update, results[0].Action, "after the other writer's 0.0.1")
	repo, err := l.Repository(ctx, "a/b")
	require.NoError(t, err)
	got, err := repo.Resolve(ctx, "0.0.2")
	require.NoError(t, err)
	assert.Equal(t, results[0].Digest, got.Digest.String(), "0.0.2 is mine")
	first, err := repo.Resolve(ctx, "0.0.1")
	require.NoError(t, err)
	assert.NotEqual(t, results[0].Digest, first.Digest.String(), "0.0.1 stays the other writer's")
}

// TestPublishAbsentButTaken: a repository the catalog did not list
// (Options.Absent) is published without asking for its versions; if it has
// them after all (another writer, a catalog that lags), the check before
// tagging finds 0.0.1 taken and the job asks, so no version is bound twice.
func TestPublishAbsentButTaken(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	publishJobs(t, dir, false, textJob("a/b", "theirs"), textJob("a/c", "same"))
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
	require.NoError(t, err)
	absent := map[string]bool{"a/b": true, "a/c": true, "a/d": true}
	results, err := Publish(ctx, l, []Job{textJob("a/b", "mine"), textJob("a/c", "same"), textJob("a/d", "new")}, Options{Absent: absent})
	require.NoError(t, err)
	require.NoError(t, l.Save(ctx))
	require.NoError(t, l.Close())
	var got []string
	for _, r := range results {
		got = append(got, r.Repository+" "+r.Version+" "+r.Action)
	}
	assert.Equal(t, []string{"a/b 0.0.2 update", "a/c 0.0.1 unchanged", "a/d 0.0.1 create"}, got)
	assert.Equal(t, []string{"a/b 0.0.1 theirs", "a/b 0.0.2 mine"}, versionsOf(t, dir, "a/b"), "0.0.1 still holds theirs")
}

// versionsOf lists each version of a repository of the layout in dir with
// the text of its one layer.
func versionsOf(t *testing.T, dir, repo string) []string {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	r, err := l.Repository(ctx, repo)
	require.NoError(t, err)
	tags, err := store.Tags(ctx, r)
	require.NoError(t, err)
	var out []string
	for _, tag := range tags {
		desc, err := r.Resolve(ctx, tag)
		require.NoError(t, err)
		layers, err := fetchLayers(ctx, r, desc)
		require.NoError(t, err)
		require.Len(t, layers, 1)
		out = append(out, repo+" "+tag+" "+string(layers[0].Data))
	}
	return out
}
