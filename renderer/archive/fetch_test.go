package archive

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggcrremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestFetchPrivateSource: a source registry that wants a login is read with
// the credentials of the Docker config ($DOCKER_CONFIG); without them the
// dependency is named as not read. An image without signatures has none
// (the registry's 404s are no error).
func TestFetchPrivateSource(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test runs a real registry (the Distribution registry)")
	}
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	img, err := random.Image(128, 2)
	require.NoError(t, err)
	ref, err := name.ParseReference(reg.Host+"/private/app:2.0", name.Insecure)
	require.NoError(t, err)
	require.NoError(t, ggcrremote.Write(ref, img, ggcrremote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password})))
	want, err := img.Digest()
	require.NoError(t, err)
	opts := SourceOptions{PlainHTTP: []string{reg.Host}}
	reqs := []Request{{KindImage, reg.Host + "/private/app:2.0"}}

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	_, err = FetchDependencies(context.Background(), reqs, opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "image "+reg.Host+"/private/app:2.0: resolving 2.0")

	config := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	require.NoError(t, os.WriteFile(filepath.Join(config, "config.json"), fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, reg.Host, auth), 0o600))
	t.Setenv("DOCKER_CONFIG", config)
	f, err := FetchDependencies(context.Background(), reqs, opts)
	require.NoError(t, err)
	defer f.Close()
	require.Len(t, f.Dependencies, 1)
	assert.Equal(t, want.String(), f.Dependencies[0].Digest.String())
	assert.Empty(t, f.Dependencies[0].Signatures)
	assert.Len(t, f.blobs, 4, "the manifest, its config and two layers")
}
