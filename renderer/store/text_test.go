package store

import (
	"bytes"
	"context"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
)

// putText tags version of repository name in s with an artifact that is not
// a chart: one text layer, the version in the config.
func putText(t testing.TB, s Store, name, version, text string) {
	t.Helper()
	ctx := context.Background()
	repo, err := s.Repository(ctx, name)
	require.NoError(t, err)
	config := pushBlob(t, repo, "application/vnd.example.config.v1+json", []byte(`{"version":"`+version+`"}`))
	layer := pushBlob(t, repo, "text/plain", []byte(text))
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		ConfigDescriptor: &config, Layers: []ocispec.Descriptor{layer},
	})
	require.NoError(t, err)
	require.NoError(t, repo.Tag(ctx, desc, version))
}

// putTexts writes texts as versions 0.0.1, 0.0.2, ... of repository name in
// the layout in dir, saved.
func putTexts(t *testing.T, dir, name string, texts ...string) {
	t.Helper()
	ctx := context.Background()
	l, err := OpenLayout(ctx, dir, LayoutOptions{})
	require.NoError(t, err)
	defer l.Close()
	for i, text := range texts {
		putText(t, l, name, "0.0."+string(rune('1'+i)), text)
	}
	require.NoError(t, l.Save(ctx))
}

func pushBlob(t testing.TB, repo Repository, mediaType string, data []byte) ocispec.Descriptor {
	t.Helper()
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if ok, err := repo.Exists(context.Background(), d); err == nil && ok {
		return d
	}
	require.NoError(t, repo.Push(context.Background(), d, bytes.NewReader(data)))
	return d
}
