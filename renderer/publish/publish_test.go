package publish

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	l, err := OpenLayout(ctx, dir, LayoutOptions{ReadOnly: dryRun})
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
	l, err := OpenLayout(ctx, filepath.Join(t.TempDir(), "out"), LayoutOptions{})
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
