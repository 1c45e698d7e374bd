package publish_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Publishing any content-addressed artifact into an OCI image layout: the
// second run finds the same content and writes nothing.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "layout")
	defer os.RemoveAll(dir)
	job := publish.Job{Repository: "fleet/agent", Pack: func(version string) (*publish.Artifact, error) {
		return &publish.Artifact{
			Config: publish.NewBlob("application/vnd.example.config.v1+json", []byte(`{}`)),
			Layers: []publish.Blob{publish.NewBlob("application/octet-stream", []byte("agent binary"))},
		}, nil
	}}
	for range 2 {
		store, err := store.OpenLayout(ctx, filepath.Join(dir, "out"), store.LayoutOptions{})
		if err != nil {
			panic(err)
		}
		results, err := publish.Publish(ctx, store, []publish.Job{job}, publish.Options{})
		if err != nil {
			panic(err)
		}
		if err := store.Save(ctx); err != nil {
			panic(err)
		}
		store.Close()
		fmt.Println(results[0].Repository, results[0].Version, results[0].Action)
	}
	// Output:
	// fleet/agent 0.0.1 create
	// fleet/agent 0.0.1 unchanged
}
