package archive

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// TestPushArchive: an archive pushed into a fresh registry puts there every
// repository, version, manifest and signature of the layout it was exported
// from; a second push writes nothing; a tampered archive, or one not signed
// with the key, is refused before anything is written.
func TestPushArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test runs a real registry (the Distribution registry)")
	}
	ctx := context.Background()
	k, v := signingKey(t)
	dir := signedLayout(t, k, false) // rendered for an empty registry
	file, _ := export(t, dir)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	remote, err := store.NewRemote(store.RemoteOptions{Host: proxy.Host, Prefix: "p", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	catalog := func() []string {
		t.Helper()
		got, err := remote.Repositories(ctx, "")
		require.NoError(t, err)
		return got
	}

	// A changed byte: refused before the registry is asked anything.
	good, err := os.ReadFile(file)
	require.NoError(t, err)
	entries := readEntries(t, good)
	for i, e := range entries {
		if string(e.data) == "shared" {
			entries[i].data = []byte("sharEd")
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.tar")
	require.NoError(t, os.WriteFile(bad, writeEntries(t, entries), 0o600))
	_, err = Unpack(ctx, bad, DefaultLimits)
	require.ErrorIs(t, err, ErrRefused)

	u, err := Unpack(ctx, file, DefaultLimits)
	require.NoError(t, err)
	defer u.Close()
	_, other := signingKey(t)
	_, err = publish.PushLayout(ctx, u, remote, publish.Options{Verifier: other}, nil)
	require.ErrorIs(t, err, publish.ErrSignature)
	assert.Empty(t, catalog(), "a refused push writes nothing")
	assert.Zero(t, countproxy.Writes(proxy.Take()))

	results, err := publish.PushLayout(ctx, u, remote, publish.Options{Verifier: v}, nil)
	require.NoError(t, err)
	require.Len(t, results, 3)
	assert.Equal(t, repos, catalog())
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, contents(t, l, repos), contents(t, remote, repos), "the registry holds what the layout held")
	proxy.Take()
	results, err = publish.PushLayout(ctx, u, remote, publish.Options{Verifier: v}, nil)
	require.NoError(t, err)
	for _, r := range results {
		assert.Equal(t, publish.Unchanged, r.Action, r.Repository)
	}
	assert.Zero(t, countproxy.Writes(proxy.Take()), "a second push writes nothing")
}
