package imagebuild_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/imagebuild"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// An image published with Solar's publish path gets its version from its
// content, as a chart does: 0.0.1 first, the same build again changes
// nothing (no write, the signature there already), a changed build is
// 0.0.2. Each platform's SBOM is a referrer of its image on the registry,
// and the cosign CLI verifies the index's signature with the public key of
// the pair cosign made.
func TestPublishedImageIsSignedAndVersionedByContent(t *testing.T) {
	cosign := testenv.Tool(t, "cosign")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true})
	ctx := context.Background()
	dir := t.TempDir()
	gen := exec.Command(cosign, "generate-key-pair")
	gen.Dir, gen.Env = dir, append(os.Environ(), "COSIGN_PASSWORD=pw")
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "%s", out)
	pem, err := os.ReadFile(filepath.Join(dir, "cosign.key"))
	require.NoError(t, err)
	key, err := sign.ParseKey(pem, func() ([]byte, bool) { return []byte("pw"), true })
	require.NoError(t, err)
	store, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", PlainHTTP: true})
	require.NoError(t, err)

	src := writeHello(t, "src")
	publishBuild := func(version string) publish.Result {
		t.Helper()
		opts := helloOptions(src)
		opts.Version = version
		res, err := imagebuild.Build(ctx, opts)
		require.NoError(t, err)
		layout := filepath.Join(t.TempDir(), "hello")
		desc, err := imagebuild.WriteLayout(layout, version, res)
		require.NoError(t, err)
		r, err := imagebuild.Publish(ctx, layout, desc, store, "hello", publish.Options{SigningKey: key})
		require.NoError(t, err)
		assert.Equal(t, desc.Digest.String(), r.Digest)
		return r
	}
	first := publishBuild("1.2.3")
	assert.Equal(t, "0.0.1", first.Version)
	assert.Equal(t, publish.Create, first.Action)
	assert.Equal(t, publish.Create, first.SignatureAction)
	again := publishBuild("1.2.3")
	assert.Equal(t, []string{"0.0.1", first.Digest, publish.Unchanged, first.Signature, publish.Unchanged},
		[]string{again.Version, again.Digest, again.Action, again.Signature, again.SignatureAction})

	ref := reg.Host + "/solar/hello@" + first.Digest
	verify := exec.Command(cosign, "verify", "--key", filepath.Join(dir, "cosign.pub"), "--insecure-ignore-tlog", "--allow-http-registry", ref)
	verify.Env = append(os.Environ(), "HOME="+dir, "DOCKER_CONFIG="+dir, "COSIGN_REPOSITORY=")
	out, err = verify.CombinedOutput()
	assert.NoError(t, err, "cosign verify %s:\n%s", ref, out)

	// Each platform's image names its SBOM among its referrers.
	repo, err := remote.NewRepository(reg.Host + "/solar/hello")
	require.NoError(t, err)
	repo.PlainHTTP = true
	index, err := repo.Resolve(ctx, "0.0.1")
	require.NoError(t, err)
	manifests := indexManifests(t, repo, index)
	require.Len(t, manifests, 2)
	for _, m := range manifests {
		var sboms []ocispec.Descriptor
		require.NoError(t, repo.Referrers(ctx, m, api.MediaTypeSBOM, func(r []ocispec.Descriptor) error {
			sboms = append(sboms, r...)
			return nil
		}))
		assert.Len(t, sboms, 1, "the SBOM of %s", m.Platform.Architecture)
	}

	changed := publishBuild("1.2.4") // the version is linked into the binary
	assert.Equal(t, "0.0.2", changed.Version)
	assert.Equal(t, publish.Update, changed.Action)
	assert.NotEqual(t, first.Digest, changed.Digest)
}

// indexManifests reads the manifests an index in repo names.
func indexManifests(t *testing.T, repo *remote.Repository, index ocispec.Descriptor) []ocispec.Descriptor {
	t.Helper()
	raw, err := content.FetchAll(context.Background(), repo, index)
	require.NoError(t, err)
	var ix ocispec.Index
	require.NoError(t, json.Unmarshal(raw, &ix))
	return ix.Manifests
}
