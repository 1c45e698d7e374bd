package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
)

// DeviceResults are ApplyFleet's results, in the order of the input.
type DeviceResults []fleet.Result

// Failed says whether a device failed.
func (r DeviceResults) Failed() bool { return fleet.Failed(r) }

// Changed says whether an attempt was (or, in a dry run, would be) written.
func (r DeviceResults) Changed() bool { return fleet.Changed(r) }

// FleetOptions say where ApplyFleet reads the agent indexes and writes the
// attempts.
type FleetOptions struct {
	// Store is the registry of the agent indexes; the attempts are stored
	// beside them.
	Store *Store
	// NATS is the fleet's bucket, opened once the input holds no error: it
	// is created when missing, except in a dry run (Options.DryRun), which
	// reads a missing bucket as empty.
	NATS fleetkv.NATS
	// Concurrency is how many devices are applied at once.
	Concurrency int
	// Progress, when set, is called after each device.
	Progress func(done, total int)
}

// ApplyFleet reads and validates the objects of opts.Paths, resolves every
// DeviceUpgrade into one attempt per device (reading the agent indexes
// first), and applies them (opts.DryRun: reads only). It resolves the
// fleet's kinds alone, not the cluster Targets (Load does): a Target that
// fails to resolve does not block a device rollout. A problem of the input or
// of resolving stops it before the bucket is opened: no results then.
func ApplyFleet(ctx context.Context, opts Options, fo FleetOptions) (DeviceResults, diag.List, error) {
	set, problems, err := loadSet(opts, false)
	if err != nil || set == nil || problems.HasErrors() {
		return nil, problems, err
	}
	if len(set.DeviceUpgrades) == 0 {
		return nil, problems, fmt.Errorf("no DeviceUpgrade in %v: nothing to apply", opts.Paths)
	}
	// One time for the whole pass: the update windows and the rollout's
	// decisions are taken at it.
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	planned, more := fleet.Resolve(set, readAgents(ctx, fo.Store, set), opts.Now)
	if problems = append(problems, more...).Sorted(); problems.HasErrors() {
		return nil, problems, nil
	}
	fo.NATS.Mode = fleetkv.Create
	if opts.DryRun {
		fo.NATS.Mode = fleetkv.MayBeMissing
	}
	bucket, done, err := fleetkv.Connect(ctx, fo.NATS)
	if err != nil {
		return nil, problems, err
	}
	defer done()
	if opts.Settle == 0 {
		opts.Settle = DefaultSettle
	}
	planned, held, err := gateDevices(ctx, set, planned, bucket, fo.Store.Store, opts)
	if err != nil {
		return nil, problems, err
	}
	results := fleetkv.Apply(ctx, planned, fo.Store.putAttempt, bucket, fleetkv.ApplyOptions{DryRun: opts.DryRun, Concurrency: fo.Concurrency, Progress: fo.Progress})
	return append(results, held...), problems, nil
}

// FleetStatus reads what the bucket, which must exist, holds about the
// devices named, or about every device it knows.
func FleetStatus(ctx context.Context, n fleetkv.NATS, deviceIDs ...string) ([]fleet.Status, error) {
	n.Mode = fleetkv.MustExist
	bucket, done, err := fleetkv.Connect(ctx, n)
	if err != nil {
		return nil, err
	}
	defer done()
	return bucket.Status(ctx, deviceIDs...)
}

// RepairDevice clears a device's rollback-failed block, with the reason
// (fleetkv.Bucket.Repair); the bucket must exist.
func RepairDevice(ctx context.Context, n fleetkv.NATS, deviceID, reason string) error {
	n.Mode = fleetkv.MustExist
	bucket, done, err := fleetkv.Connect(ctx, n)
	if err != nil {
		return err
	}
	defer done()
	return bucket.Repair(ctx, deviceID, reason)
}

// AgentOptions say what PushAgent pushes.
type AgentOptions struct {
	// Repository is the agent's, below the registry's prefix.
	Repository string
	// Version is the index's tag ("": the one the binaries' Go build
	// information names, fleet.AgentVersion).
	Version string
	// Files are FILE=OS/ARCH[/VARIANT]: the binaries and their platforms.
	Files []string
	// Created is the manifests' created time (zero: the Unix epoch).
	Created time.Time
}

// PushedAgent is what PushAgent pushed: the index, and per platform the
// binary's digest, size and download URL.
type PushedAgent struct {
	Repository, Version, Digest, Action string
	Platforms                           []PushedPlatform
}

// PushedPlatform is one binary of a pushed agent.
type PushedPlatform struct {
	Platform string `json:"platform"`
	Digest   string `json:"digest"`
	Size     int64  `json:"size"`
	// URL is where a device downloads the binary (registry pushes only).
	URL string `json:"url,omitempty"`
}

// PushAgent reads the agent binaries, settles their version, packs them as
// an OCI index by platform, and only then opens the store so names and puts
// the index into it (a version is immutable: other content under it is
// refused); a layout is saved.
func PushAgent(ctx context.Context, so StoreOptions, ao AgentOptions) (*PushedAgent, error) {
	bins, err := readBinaries(ao.Files)
	if err != nil {
		return nil, err
	}
	version, err := fleet.AgentVersion(bins, ao.Version)
	if err != nil {
		return nil, err
	}
	packed, err := fleet.PackAgent(version, bins, ao.Created)
	if err != nil {
		return nil, err
	}
	s, err := OpenStore(ctx, so)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	repo, err := s.Repository(ctx, ao.Repository)
	if err != nil {
		return nil, err
	}
	action, err := putPacked(ctx, repo, packed)
	if err != nil {
		return nil, fmt.Errorf("%s:%s: %w", ao.Repository, version, err)
	}
	if err := s.Save(ctx); err != nil {
		return nil, err
	}
	pushed := &PushedAgent{Repository: ao.Repository, Version: version, Digest: packed.Root.Digest.String(), Action: action}
	for _, b := range bins {
		l := packed.Layers[b.Platform]
		p := PushedPlatform{Platform: b.Platform, Digest: l.Digest.String(), Size: l.Size}
		if url := s.BlobURL(ao.Repository); url != "" {
			p.URL = url + p.Digest
		}
		pushed.Platforms = append(pushed.Platforms, p)
	}
	return pushed, nil
}

// readBinaries reads FILE=OS/ARCH[/VARIANT] arguments.
func readBinaries(args []string) ([]fleet.Binary, error) {
	var bins []fleet.Binary
	for _, arg := range args {
		file, platform, ok := strings.Cut(arg, "=")
		if !ok {
			return nil, fmt.Errorf("invalid argument %q: want FILE=OS/ARCH[/VARIANT], such as dist/agent=linux/arm64", arg)
		}
		if _, err := fleet.ParsePlatform(platform); err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
		info, err := os.Stat(file)
		if err != nil {
			return nil, fmt.Errorf("reading the agent binary: %w", err)
		}
		if !info.Mode().IsRegular() || info.Size() == 0 {
			return nil, fmt.Errorf("agent binary %s: not a regular, non-empty file", file)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the agent binary: %w", err)
		}
		bins = append(bins, fleet.Binary{Platform: platform, Name: filepath.Base(file), Data: data})
	}
	return bins, nil
}
