package fleet

import (
	"context"
	"sync"

	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Result is what Apply did for one device.
type Result struct {
	DeviceID      string `json:"deviceId"`
	Upgrade       string `json:"upgrade"`
	UUID          string `json:"uuid"`
	TargetVersion string `json:"targetVersion"`
	Platform      string `json:"platform"`
	// Digest is the digest of the attempt's OCI artifact.
	Digest string `json:"digest"`
	// Action is unchanged, create or update; empty when Error is set.
	Action string `json:"action,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ApplyOptions say how Apply applies: DryRun reads only; Concurrency is how
// many devices are applied at once (at least 1).
type ApplyOptions struct {
	DryRun      bool
	Concurrency int
	// Progress, when set, is called after each device, one call at a time.
	Progress func(done, total int)
}

// Apply stores every planned attempt as an OCI artifact in store (beside its
// agent, in <repository>/attempts, tagged with its UUID) and makes it its
// device's current attempt in the bucket. A device that fails (ErrChanged,
// wire.ErrBlocked, ErrRebound, a registry or NATS error) does not stop the others:
// its Result says why. A dry run writes nothing to either.
//
// Devices are independent (one key each): up to opts.Concurrency of them
// are applied at once; the results keep the order of planned.
func Apply(ctx context.Context, planned []Planned, store store.Store, bucket *Bucket, opts ApplyOptions) []Result {
	out := make([]Result, len(planned))
	sem := make(chan struct{}, max(opts.Concurrency, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, p := range planned {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			a := p.Attempt
			r := Result{DeviceID: a.DeviceID, Upgrade: p.Upgrade, UUID: a.UUID, TargetVersion: a.TargetVersion, Platform: a.Artifact.Platform}
			action, err := applyOne(ctx, p, store, bucket, opts.DryRun, &r)
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

func applyOne(ctx context.Context, p Planned, store store.Store, bucket *Bucket, dryRun bool, r *Result) (string, error) {
	packed, err := PackAttempt(ctx, p.Attempt)
	if err != nil {
		return "", err
	}
	r.Digest = packed.Root.Digest.String()
	// Read and check first: a blocked device gets no artifact either.
	w, err := bucket.Prepare(ctx, p.Attempt, r.Digest)
	if err != nil || dryRun || w.Action == publish.Unchanged {
		return actionOf(w), err
	}
	repo, err := store.Repository(ctx, p.Repository+"/attempts")
	if err != nil {
		return "", err
	}
	if _, err := Put(ctx, repo, packed); err != nil {
		return "", err
	}
	return w.Action, w.Commit(ctx)
}

// Failed reports whether a device of the results failed.
func Failed(results []Result) bool {
	for _, r := range results {
		if r.Error != "" {
			return true
		}
	}
	return false
}

// Changed reports whether a result writes (or, in a dry run, would write).
func Changed(results []Result) bool {
	for _, r := range results {
		if r.Action == publish.Create || r.Action == publish.Update {
			return true
		}
	}
	return false
}
