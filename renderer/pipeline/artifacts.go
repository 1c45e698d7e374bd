package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/solar-pipeline/solar/renderer/artifacts"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/objdiff"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// ArtifactOptions say how Artifacts renders the chains.
type ArtifactOptions struct {
	// FluxNamespace is where the bootstrap chart is installed
	// ("flux-system" when empty).
	FluxNamespace string
	// App reads application charts from their registries (nil: not read:
	// they are listed by their tag, without digest, and their images are
	// not listed).
	App *objdiff.Fetcher
}

// rendered is one chart a Target's chain renders, and its objects.
type rendered struct {
	level int
	ref   objdiff.Ref
	app   bool
	objs  []objdiff.Object
}

// Artifacts lists, without writing, every OCI artifact the chain of each
// Target of the plan needs (package artifacts): its bootstrap chart and
// release charts as a publish into the store would leave them (a chart the
// store holds unchanged: by version and digest; else by repository alone),
// the application charts their HelmReleases install, and the container
// images those render (Helm's engine, as Diff renders them). With a mirror
// the release charts name the site's copies of the application charts;
// those are read from their sources all the same, and listed by their
// source reference with their Site.
func Artifacts(ctx context.Context, plan *Plan, st store.Store, opts Options, ao ArtifactOptions) (*artifacts.List, error) {
	opts.DryRun, opts.Compare = true, true
	report, err := Run(ctx, plan, st, opts)
	var c artifacts.Collector
	c.Problems(report.Problems)
	origins := originsOf(plan)
	c.Mirror = origins.mirror
	if err != nil {
		return c.List(), err
	}
	registries, fallback := renderRegistries(plan, opts.Registry)
	fresh := map[string]freshChart{}
	for _, tr := range report.Targets {
		target := tr.Namespace + "/" + tr.Name
		reg := cmp.Or(registries[target], fallback)
		for _, r := range tr.Releases {
			solarChart(&c, fresh, target, artifacts.KindRelease, reg, *r.Result)
		}
		solarChart(&c, fresh, target, artifacts.KindBootstrap, reg, tr.Result)
	}
	walked, notes, err := walkChains(ctx, report, st, fresh, registries, fallback, origins, ao)
	if err != nil {
		return c.List(), err
	}
	for i, tr := range report.Targets {
		target := tr.Namespace + "/" + tr.Name
		appCharts(&c, target, cmp.Or(registries[target], fallback), walked[i], origins, ao.App)
	}
	for _, n := range noteLines(notes) {
		c.Note(n)
	}
	if ao.App == nil {
		c.Note("application charts were not read: listed by their tag without digest, their images not listed")
	}
	return c.List(), nil
}

// solarChart lists a chart of Solar's a Target needs, and keeps the content
// of one a publish would write, to render its chain from.
func solarChart(c *artifacts.Collector, fresh map[string]freshChart, target, kind, reg string, r publish.Result) {
	if r.Repository == "" {
		return
	}
	ref := strings.TrimPrefix(chain.URL(reg, r.Repository), "oci://")
	if reg == "" {
		ref = r.Repository
	}
	digest := ""
	if r.Action == publish.Unchanged {
		ref, digest = ref+":"+r.Version, r.Digest
	}
	c.Chart(target, kind, ref, digest)
	if layer := publish.ChartLayer(r.New); layer != nil {
		if _, ok := fresh[r.Repository]; !ok {
			fresh[r.Repository] = freshChart{version: r.Version, archive: layer}
		}
	}
}

// walkChains renders each Target's chain (report.Targets' order; the
// Targets at once, GOMAXPROCS at a time) from its bootstrap chart, and
// returns per Target the charts rendered; notes say what was not.
func walkChains(ctx context.Context, report *Report, st store.Store, fresh map[string]freshChart, registries map[string]string, fallback string, origins origins, ao ArtifactOptions) ([][]rendered, []objdiff.Note, error) {
	read := storeReader(st)
	charts := func(ctx context.Context, repo, version string) ([]byte, error) {
		if f, ok := fresh[repo]; ok && f.version == version {
			return f.archive, nil
		}
		return read(ctx, repo, version)
	}
	var app func(context.Context, objdiff.Ref) ([]byte, error)
	if ao.App != nil {
		app = origins.reader(ao.App.Fetch)
	}
	flux := cmp.Or(ao.FluxNamespace, "flux-system")
	cache := objdiff.NewCache(renderCacheSize)
	out := make([][]rendered, len(report.Targets))
	notes := make([][]objdiff.Note, len(report.Targets))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, tr := range report.Targets {
		if tr.Repository == "" {
			continue
		}
		target := tr.Namespace + "/" + tr.Name
		g.Go(func() error {
			boot, err := charts(gctx, tr.Repository, tr.Version)
			if err != nil {
				notes[i] = []objdiff.Note{{Release: target + " bootstrap chart", Reason: err.Error()}}
				return nil
			}
			w := &objdiff.Walker{Registry: cmp.Or(registries[target], fallback), FluxNamespace: flux, Store: charts, App: app, Cache: cache,
				Rendered: func(level int, ref objdiff.Ref, isApp bool, objs []objdiff.Object) {
					out[i] = append(out[i], rendered{level, ref, isApp, objs})
				}}
			if _, err := w.Walk(gctx, boot); err != nil {
				return fmt.Errorf("%s: %w", target, err)
			}
			notes[i] = w.Notes
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	var all []objdiff.Note
	for _, n := range notes {
		all = append(all, n...)
	}
	return out, all, nil
}

// appCharts lists the application charts a Target's chain names (every
// OCIRepository Solar's charts render that is not one of Solar's under its
// render registry), with the digest read where fetcher read the chart, and
// the images of each application chart rendered.
func appCharts(c *artifacts.Collector, target, reg string, walked []rendered, origins origins, fetcher *objdiff.Fetcher) {
	for _, r := range walked {
		if r.app {
			c.Objects(target, appReference(origins.source(r.ref)), r.objs)
			continue
		}
		for _, o := range r.objs {
			if o.Kind != "OCIRepository" || !strings.HasPrefix(o.APIVersion, "source.toolkit.fluxcd.io/") {
				continue
			}
			ref := ociRef(o)
			// A mirror's copy is an application chart, also where the mirror
			// is the render registry.
			_, copied := origins.byURL[ref.URL]
			if repo, ok := strings.CutPrefix(ref.URL, chain.URL(reg, "")); ok && reg != "" && chain.IsChartRepository(repo) && !copied {
				continue
			}
			ref = origins.source(ref)
			digest := ref.Digest
			if fetcher != nil {
				digest = cmp.Or(digest, fetcher.Digest(ref))
			}
			c.Chart(target, artifacts.KindChart, appReference(ref), digest)
		}
	}
}

// origins are the sources of the application charts a mirror relocated:
// the release charts name the site's copies, which the connected side
// cannot read.
type origins struct {
	// mirror is the mirror's HOSTNAME/PATH, "" without one.
	mirror string
	// byURL maps a copy's oci:// URL to its source's (URL and insecure).
	byURL map[string]objdiff.Ref
}

// originsOf are the plan's mirrored charts, by their copy's URL.
func originsOf(plan *Plan) origins {
	o := origins{byURL: map[string]objdiff.Ref{}}
	for _, t := range plan.Targets {
		if t.Mirror != nil {
			o.mirror = t.Mirror.Base
		}
		for _, sel := range t.Releases {
			if src := sel.Chart.Origin; src != nil {
				o.byURL["oci://"+sel.Chart.Repository] = objdiff.Ref{URL: "oci://" + src.Repository, Insecure: src.Insecure}
			}
		}
	}
	return o
}

// source is where ref's chart is read from: its source when ref names a
// mirror's copy (same tag and digest), else ref.
func (o origins) source(ref objdiff.Ref) objdiff.Ref {
	if src, ok := o.byURL[ref.URL]; ok {
		ref.URL, ref.Insecure = src.URL, src.Insecure
	}
	return ref
}

// reader reads an application chart with read, a mirror's copy from its
// source (nil: nil, no chart is read).
func (o origins) reader(read func(context.Context, objdiff.Ref) ([]byte, error)) func(context.Context, objdiff.Ref) ([]byte, error) {
	if read == nil {
		return nil
	}
	return func(ctx context.Context, ref objdiff.Ref) ([]byte, error) { return read(ctx, o.source(ref)) }
}

// ociRef is where an OCIRepository points.
func ociRef(o objdiff.Object) objdiff.Ref {
	spec, _ := o.Body()["spec"].(map[string]any)
	r, _ := spec["ref"].(map[string]any)
	var ref objdiff.Ref
	ref.URL, _ = spec["url"].(string)
	ref.Tag, _ = r["tag"].(string)
	ref.Digest, _ = r["digest"].(string)
	return ref
}

// appReference is an application chart's reference as tools take it:
// HOST/REPOSITORY:TAG (or @DIGEST when the OCIRepository pins one).
func appReference(ref objdiff.Ref) string {
	return strings.TrimPrefix(ref.String(), "oci://")
}
