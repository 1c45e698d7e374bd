// Package storetest reads what solar's tests check in a registry: every tag
// with its manifest digest. It is apart from internal/testkit/testenv, which
// renderer/publish's own tests import.
package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// RegistryTags reads every tag of reg under solar/ as repository:tag →
// manifest digest.
func RegistryTags(t testing.TB, reg *testenv.Registry) map[string]string {
	t.Helper()
	ctx := context.Background()
	r, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	repos, err := r.Repositories(ctx, "")
	require.NoError(t, err)
	state := map[string]string{}
	for _, name := range repos {
		repo, err := r.Repository(ctx, name)
		require.NoError(t, err)
		tags, err := store.Tags(ctx, repo)
		require.NoError(t, err)
		for _, tag := range tags {
			desc, err := repo.Resolve(ctx, tag)
			require.NoError(t, err)
			state[name+":"+tag] = desc.Digest.String()
		}
	}
	return state
}
