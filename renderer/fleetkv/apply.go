package fleetkv

import (
	"context"
	"sync"

	"github.com/solar-pipeline/solar/internal/killpoint"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// PutAttempt stores the artifact of an attempt (fleet.PackAttempt) in the
// registry, in repository under its tag: the one step of Apply that is not
// the bucket's.
type PutAttempt func(ctx context.Context, repository string, p *fleet.Packed) error

// ApplyOptions say how Apply applies: DryRun reads only; Concurrency is how
// many devices are applied at once (at least 1).
type ApplyOptions struct {
	DryRun      bool
	Concurrency int
	// Progress, when set, is called after each device, one call at a time.
	Progress func(done, total int)
}

// Apply stores every planned attempt as an OCI artifact with put (beside its
// agent, in <repository>/attempts, tagged with its UUID) and makes it its
// device's current attempt in the bucket. A device that fails (ErrChanged,
// wire.ErrBlocked, ErrRebound, a registry or NATS error) does not stop the others:
// its Result says why. A dry run writes nothing to either.
//
// Devices are independent (one key each): up to opts.Concurrency of them
// are applied at once; the results keep the order of planned.
func Apply(ctx context.Context, planned []fleet.Planned, put PutAttempt, bucket *Bucket, opts ApplyOptions) []fleet.Result {
	out := make([]fleet.Result, len(planned))
	sem := make(chan struct{}, max(opts.Concurrency, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, p := range planned {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			a := p.Attempt
			r := fleet.Result{DeviceID: a.DeviceID, Upgrade: p.Upgrade, UUID: a.UUID, TargetVersion: a.TargetVersion, Platform: a.Artifact.Platform}
			action, err := applyOne(ctx, p, put, bucket, opts.DryRun, &r)
			if err != nil {
				r.Error = err.Error()
			} else {
				r.Action = action
			}
			out[i] = r
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, len(planned))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

func applyOne(ctx context.Context, p fleet.Planned, put PutAttempt, bucket *Bucket, dryRun bool, r *fleet.Result) (string, error) {
	packed, err := fleet.PackAttempt(p.Attempt)
	if err != nil {
		return "", err
	}
	r.Digest = packed.Root.Digest.String()
	// Read and check first: a blocked device gets no artifact either.
	w, err := bucket.Prepare(ctx, p.Attempt, r.Digest)
	if err != nil || dryRun || w.Action == publish.Unchanged {
		return actionOf(w), err
	}
	if err := put(ctx, p.Repository+"/attempts", packed); err != nil {
		return "", err
	}
	if err := w.Commit(ctx); err != nil {
		return "", err
	}
	killpoint.Here("attempt-written") // this device's attempt is current, others' may not be
	return w.Action, nil
}
