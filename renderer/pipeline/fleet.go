package pipeline

import (
	"context"
	"fmt"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// FleetOptions say where ApplyFleet reads the agent indexes and writes the
// attempts.
type FleetOptions struct {
	// Store is the registry of the agent indexes; the attempts are stored
	// beside them.
	Store publish.Store
	// BlobURL is where a device downloads the blobs of a repository of
	// Store, to which it appends a digest.
	BlobURL func(repo string) string
	// Bucket opens the fleet's bucket, once the input holds no error.
	Bucket func(ctx context.Context) (bucket *fleet.Bucket, done func(), err error)
	// Concurrency is how many devices are applied at once.
	Concurrency int
}

// ApplyFleet reads and validates the objects of opts.Paths, resolves every
// DeviceUpgrade into one attempt per device (reading the agent indexes), and
// applies them (opts.DryRun: reads only). A problem of the input or of
// resolving stops it before the bucket is opened: no results then.
func ApplyFleet(ctx context.Context, opts Options, fo FleetOptions) ([]fleet.Result, diag.List, error) {
	set, problems, err := Load(opts)
	if err != nil || set == nil || problems.HasErrors() {
		return nil, problems, err
	}
	if len(set.DeviceUpgrades) == 0 {
		return nil, problems, fmt.Errorf("no DeviceUpgrade in %v: nothing to apply", opts.Paths)
	}
	planned, more := fleet.Resolve(ctx, set, fleet.StoreAgents(fo.Store, fo.BlobURL))
	if problems = append(problems, more...).Sorted(); problems.HasErrors() {
		return nil, problems, nil
	}
	bucket, done, err := fo.Bucket(ctx)
	if err != nil {
		return nil, problems, err
	}
	defer done()
	return fleet.Apply(ctx, planned, fo.Store, bucket, opts.DryRun, fo.Concurrency), problems, nil
}
