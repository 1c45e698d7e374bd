package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestRemoteRepositoriesUnderPrefix lists a namespace's repositories from the
// real registry's catalog, which starts at the namespace and stops after it:
// neighbours that share a prefix of the name, or sort between, are not its.
func TestRemoteRepositoriesUnderPrefix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a registry")
	}
	ctx := context.Background()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	remote := func(prefix string) *Remote {
		r, err := NewRemote(RemoteOptions{Host: reg.Host, Prefix: prefix, Username: reg.Username, Password: reg.Password, PlainHTTP: true})
		require.NoError(t, err)
		return r
	}
	p, pp := remote("p"), remote("pp")
	for _, name := range []string{"a/one", "a-b/two", "ab/three", "a/sub/four", "b/five", "a.c/six"} {
		putText(t, p, name, "0.0.1", name)
	}
	putText(t, pp, "a/seven", "0.0.1", "seven")

	got, err := p.Repositories(ctx, "a/")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/one", "a/sub/four"}, got)
	got, err = p.Repositories(ctx, "")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a-b/two", "a.c/six", "a/one", "a/sub/four", "ab/three", "b/five"}, got)
	got, err = pp.Repositories(ctx, "a/")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/seven"}, got)
}
