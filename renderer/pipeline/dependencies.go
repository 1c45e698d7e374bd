package pipeline

import (
	"context"
	"errors"
	"path"

	"oras.land/oras-go/v2"

	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/store"
)

// DefaultMirrorPath is where push relocates an archive's dependencies in
// the site's registry: HOST/mirror/<source host>/<path>.
const DefaultMirrorPath = "mirror"

// ExportDependencies is Export, the archive also carrying the application
// charts and images reqs names, read whole from their registries
// (archive.FetchDependencies): nothing is written unless every one was
// read.
func ExportDependencies(ctx context.Context, s *Store, reqs []archive.Request, opts archive.SourceOptions, name string) (*archive.Summary, error) {
	if s.Layout == nil {
		return nil, errors.New("export reads a layout")
	}
	deps, err := archive.FetchDependencies(ctx, reqs, opts)
	if err != nil {
		return nil, err
	}
	defer deps.Close()
	return archive.WriteFileWith(ctx, s.Layout, archive.Options{Deps: deps, Have: opts.Have}, name)
}

// PlanDependencies is where the dependencies of the archive src
// (OpenArchive) go in the registry dst: under its host's mirrorPath
// (archive.PlanDependencies), read with dst's credentials; nil when src
// carries none. A relocated tag at another digest there refuses the push.
func PlanDependencies(ctx context.Context, src, dst *Store, mirrorPath string) (*archive.DependencyPlan, error) {
	u, ok := src.Store.(*archive.Unpacked)
	if !ok || len(u.Dependencies) == 0 {
		return nil, nil
	}
	if dst.remoteOpts == nil {
		return nil, errors.New("push relocates dependencies into a registry")
	}
	opts := *dst.remoteOpts
	opts.Prefix = ""
	site, err := store.NewRemote(opts)
	if err != nil {
		return nil, err
	}
	open := func(ctx context.Context, name string) (oras.Target, error) { return site.Repository(ctx, name) }
	return u.PlanDependencies(ctx, path.Join(opts.Host, mirrorPath), open)
}
