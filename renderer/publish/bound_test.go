package publish

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// signUnbound attaches to repo:version in l the signature an older solar
// made with k (its statement names neither repository nor version) and
// returns the referrer's digest.
func signUnbound(t *testing.T, l *store.Layout, k *sign.Key, repo, version string) string {
	t.Helper()
	ctx := context.Background()
	r, err := l.Repository(ctx, repo)
	require.NoError(t, err)
	desc, err := r.Resolve(ctx, version)
	require.NoError(t, err)
	b, err := k.Bundle(repo, desc.Digest)
	require.NoError(t, err)
	raw, layer, err := sign.Referrer(b, desc)
	require.NoError(t, err)
	require.NoError(t, r.Push(ctx, layer, bytes.NewReader(b)))
	require.NoError(t, r.Push(ctx, ocispec.DescriptorEmptyJSON, bytes.NewReader(ocispec.DescriptorEmptyJSON.Data)))
	ref := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	ref.ArtifactType = api.MediaTypeSigstoreBundle
	require.NoError(t, r.Push(ctx, ref, bytes.NewReader(raw)))
	return ref.Digest.String()
}

// TestPublishSignsUnboundAnew (S1, old signatures): a chart an older solar
// signed, whose namespace index names that signature, is not trusted as
// signed: verify refuses it (ErrUnbound, saying to publish again), and a
// signing publish, even one the index would settle, signs it anew as its
// repository and version. A chart the index names with this key's bound
// signature is settled without asking.
func TestPublishSignsUnboundAnew(t *testing.T) {
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	k, v := signingKey(t)
	first, err := Publish(ctx, l, []Job{textJob("a/one", "hello")}, Options{})
	require.NoError(t, err)
	entries := IndexEntries(first)
	e := entries["a/one"]
	e.Signature = signUnbound(t, l, k, "a/one", "0.0.1")
	entries["a/one"] = e
	err = checkSigned(t, l, v, "a/one", "0.0.1")
	require.ErrorIs(t, err, sign.ErrUnbound)
	assert.Contains(t, err.Error(), "publish it again")

	store := &countingStore{Store: l}
	results, err := Publish(ctx, store, []Job{textJob("a/one", "hello")}, Options{Index: entries, SigningKey: k})
	require.NoError(t, err)
	assert.Equal(t, []string{"a/one 0.0.1 unchanged"}, summary(results))
	assert.Equal(t, Create, results[0].SignatureAction, "signed anew, not trusted from the index")
	assert.NotEqual(t, e.Signature, results[0].Signature)
	require.NoError(t, checkSigned(t, l, v, "a/one", "0.0.1"))

	// The entry the run writes back names the bound signature: the next
	// run settles it from the index, without asking.
	store.opened = nil
	again, err := Publish(ctx, store, []Job{textJob("a/one", "hello")}, Options{Index: IndexEntries(results), SigningKey: k})
	require.NoError(t, err)
	assert.Equal(t, Unchanged, again[0].SignatureAction)
	assert.Equal(t, results[0].Signature, again[0].Signature)
	assert.NotContains(t, store.opened, "a/one", "settled by the index")
}
