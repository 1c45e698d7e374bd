package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/store"
)

// The whole line on examples/: plan, then publish into an OCI image layout.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "out")
	defer os.RemoveAll(dir)
	opts := pipeline.Options{LoadOptions: pipeline.LoadOptions{Paths: []string{"../../examples"}, Namespace: "beta"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	plan, err := pipeline.NewPlan(ctx, opts)
	if err != nil {
		panic(err)
	}
	store, err := store.OpenLayout(ctx, filepath.Join(dir, "out"), store.LayoutOptions{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	report, err := pipeline.Run(ctx, plan, store, opts)
	if err != nil {
		panic(err)
	}
	if err := store.Save(ctx); err != nil {
		panic(err)
	}
	for _, t := range report.Targets {
		fmt.Println(t.Namespace+"/"+t.Name, t.Repository, t.Version, t.Action)
		for _, r := range t.Releases {
			fmt.Println("  ", r.Key, r.Repository, r.Version, r.Action)
		}
	}
	// Output:
	// beta/plant-1 beta/bootstrap-plant-1 0.0.1 create
	//    metrics beta/alpha/release-metrics 0.0.1 create
	//    podinfo beta/beta/release-podinfo 0.0.1 create
	// beta/plant-2 beta/bootstrap-plant-2 0.0.1 create
	//    podinfo beta/beta/release-podinfo 0.0.1 create
}
