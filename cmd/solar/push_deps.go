package main

import (
	"context"
	"fmt"
	"path"
	"strings"

	"oras.land/oras-go/v2/registry"

	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// checkMirrorPath refuses a --mirror-path that is not a repository path.
func checkMirrorPath(p string) error {
	err := registry.Reference{Registry: "localhost", Repository: p}.ValidateRepository()
	if err != nil || path.Clean(p) != p || strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
		return fmt.Errorf("--mirror-path %q: not a repository path (lowercase letters, digits, separators; such as mirror or site/mirror)", p)
	}
	return nil
}

// pushAll pushes what the layout (or archive) holds: its dependencies
// first, relocated into the site registry (a release chart pushed then names
// a copy already there when Flux reads it), then Solar's versions. Where the
// dependencies go is planned, and the versions checked (a dry run of their
// push: the registry moved, the reviewed list, the keys), before anything is
// written, so a push refused for either writes nothing. relocated is nil
// when there are no dependencies.
func pushAll(ctx context.Context, g *globals, layout, remote *pipeline.Store, popts pipeline.PushOptions, mirrorPath string) ([]publish.Result, []archive.Relocated, error) {
	deps, err := pipeline.PlanDependencies(ctx, layout, remote, mirrorPath)
	if err != nil {
		return nil, nil, err
	}
	if deps != nil && !popts.DryRun {
		check := popts
		check.DryRun, check.Progress = true, nil
		if _, err := pipeline.Push(ctx, layout, remote, check); err != nil {
			return nil, nil, err
		}
	}
	relocated, err := pushDependencies(ctx, g, deps, popts.DryRun)
	if err != nil {
		return nil, nil, err
	}
	if deps != nil && relocated == nil {
		relocated = []archive.Relocated{}
	}
	results, err := pipeline.Push(ctx, layout, remote, popts)
	return results, relocated, err
}

// pushDependencies pushes what plan lacks at the site, or with dryRun
// lists it; nil plan: the archive carries no dependencies.
func pushDependencies(ctx context.Context, g *globals, plan *archive.DependencyPlan, dryRun bool) ([]archive.Relocated, error) {
	if plan == nil {
		return nil, nil
	}
	if dryRun {
		return plan.Results(), nil
	}
	return plan.Push(ctx, g.meter("dependency"))
}

// printRelocated writes the table of the dependencies push relocated, or
// with dryRun would: KIND, REFERENCE (the source's), SITE (where it is at
// the site), ACTION; -o name, the site references.
func (g *globals) printRelocated(deps []archive.Relocated, dryRun bool) error {
	if len(deps) == 0 {
		return nil
	}
	if g.output == "name" {
		for _, d := range deps {
			fmt.Fprintln(g.stdout, d.Site)
		}
		return nil
	}
	fmt.Fprintln(g.stdout)
	w := newTable(g.stdout)
	wide := g.output == "wide"
	if wide {
		g.header(w, "KIND\tREFERENCE\tSITE\tACTION\tDIGEST\tSIGNATURES")
	} else {
		g.header(w, "KIND\tREFERENCE\tSITE\tACTION")
	}
	for _, d := range deps {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s", d.Kind, d.Reference, d.Site, would(dryRun, d.Action))
		if wide {
			fmt.Fprintf(w, "\t%s\t%d", d.Digest, d.Signatures)
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}
