package store_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/solar-pipeline/solar/renderer/store"
)

// A layout on disk: one OCI image layout per repository, a blob and a
// manifest pushed and tagged, Save writing the index, the tags read back
// once the layout is opened again.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "layout")
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out")

	l, err := store.OpenLayout(ctx, out, store.LayoutOptions{})
	if err != nil {
		panic(err)
	}
	repo, err := l.Repository(ctx, "fleet/agent")
	if err != nil {
		panic(err)
	}
	data := []byte("agent binary")
	layer := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.Push(ctx, layer, bytes.NewReader(data)); err != nil {
		panic(err)
	}
	manifest, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "application/vnd.example.agent.v1",
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		panic(err)
	}
	for _, tag := range []string{"0.0.1", "0.0.2"} {
		if err := repo.Tag(ctx, manifest, tag); err != nil {
			panic(err)
		}
	}
	if err := l.Save(ctx); err != nil {
		panic(err)
	}
	l.Close()

	l, err = store.OpenLayout(ctx, out, store.LayoutOptions{ReadOnly: true, MustExist: true})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	names, _ := l.Repositories(ctx, "")
	repo, _ = l.Repository(ctx, names[0])
	tags, _ := store.Tags(ctx, repo)
	fmt.Println(names, tags)
	// Output:
	// [fleet/agent] [0.0.1 0.0.2]
}
