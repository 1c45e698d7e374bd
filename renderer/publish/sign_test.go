package publish

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

func signingKey(t *testing.T) (*sign.Key, *sign.Verifier) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	k, err := sign.NewKey(priv)
	require.NoError(t, err)
	v, err := sign.NewVerifier(k.PublicPEM())
	require.NoError(t, err)
	return k, v
}

// signedPublish publishes jobs into the layout in dir with k and returns
// "repository version action signatureAction" per job.
func signedPublish(t *testing.T, dir string, k *sign.Key, jobs ...Job) []string {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	results, err := Publish(ctx, l, jobs, Options{SigningKey: k})
	require.NoError(t, err)
	require.NoError(t, l.Save(ctx))
	var out []string
	for _, r := range results {
		out = append(out, r.Repository+" "+r.Version+" "+r.Action+" "+r.SignatureAction)
	}
	return out
}

// checkSigned checks the signature of repo:version in store.
func checkSigned(t *testing.T, store store.Store, v *sign.Verifier, repo, version string) error {
	t.Helper()
	ctx := context.Background()
	r, err := store.Repository(ctx, repo)
	require.NoError(t, err)
	desc, err := r.Resolve(ctx, version)
	require.NoError(t, err)
	return v.Check(ctx, r.(sign.Target), sign.Subject{Repository: repo, Version: version, Manifest: desc})
}

// TestSignedLayout: a layout keeps the signatures of its versions (in its
// index, untagged, as oras keeps referrers) across runs; an unchanged
// version signed already is not signed again and the layout is not
// written; an unsigned version is signed when a key comes; gc drops the
// signatures of the versions it drops and keeps the others'; push carries
// them to a registry, and push --key refuses a layout whose versions are
// not signed with it, before writing anything.
func TestSignedLayout(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	k, v := signingKey(t)
	// Unsigned first: a key later signs the version there.
	assert.Equal(t, []string{"a/one 0.0.1 create "}, signedPublish(t, dir, nil, textJob("a/one", "hello")))
	assert.Equal(t, []string{"a/one 0.0.1 unchanged create", "a/two 0.0.1 create create"},
		signedPublish(t, dir, k, textJob("a/one", "hello"), textJob("a/two", "world")))
	index := filepath.Join(dir, "a/one", "index.json")
	before, err := os.ReadFile(index)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/one 0.0.1 unchanged unchanged", "a/two 0.0.1 unchanged unchanged"},
		signedPublish(t, dir, k, textJob("a/one", "hello"), textJob("a/two", "world")))
	after, err := os.ReadFile(index)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "a no-op rewrites no index")

	assert.Equal(t, []string{"a/two 0.0.2 update create"}, signedPublish(t, dir, k, textJob("a/two", "world!")))
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	for _, rv := range [][2]string{{"a/one", "0.0.1"}, {"a/two", "0.0.1"}, {"a/two", "0.0.2"}} {
		assert.NoError(t, checkSigned(t, l, v, rv[0], rv[1]), "%s:%s", rv[0], rv[1])
	}
	l.Close()

	l, err = store.OpenLayout(ctx, dir, store.LayoutOptions{})
	require.NoError(t, err)
	res, err := l.GC(ctx, store.GCOptions{Keep: 1, Own: GCIndexes})
	require.NoError(t, err)
	assert.Equal(t, []string{"a/two:0.0.1"}, res.Versions)
	assert.Equal(t, 1, res.Signatures, "the signature of a/two:0.0.1 goes with it")
	l.Close()
	l, err = store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	assert.NoError(t, checkSigned(t, l, v, "a/two", "0.0.2"), "gc keeps the signature of a kept version")
	assert.NoError(t, checkSigned(t, l, v, "a/one", "0.0.1"))

	if testing.Short() {
		return
	}
	// A layout rendered for an empty registry.
	fresh := filepath.Join(t.TempDir(), "out")
	signedPublish(t, fresh, k, textJob("a/one", "hello"), textJob("a/two", "world"))
	l, err = store.OpenLayout(ctx, fresh, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	remote, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "p", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	_, other := signingKey(t)
	_, err = PushLayout(ctx, l, remote, Options{Verifier: other}, nil)
	require.ErrorIs(t, err, ErrSignature)
	assert.Contains(t, err.Error(), "a/two:0.0.1")
	repos, err := remote.Repositories(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, repos, "a refused push writes nothing")

	results, err := PushLayout(ctx, l, remote, Options{Verifier: v}, nil)
	require.NoError(t, err)
	require.Len(t, results, 2)
	assert.NoError(t, checkSigned(t, remote, v, "a/one", "0.0.1"), "push carries the signatures")
	assert.NoError(t, checkSigned(t, remote, v, "a/two", "0.0.1"))

	// The registry's gc drops a version with its signatures.
	_, err = Publish(ctx, remote, []Job{textJob("a/one", "hello again")}, Options{SigningKey: k})
	require.NoError(t, err)
	res, err = remote.GC(ctx, store.GCOptions{Keep: 1, DryRun: true, Own: GCIndexes})
	require.NoError(t, err)
	assert.Equal(t, []string{"a/one:0.0.1"}, res.Versions)
	assert.Equal(t, 1, res.Signatures, "the dry run counts the signatures that would go")
}
