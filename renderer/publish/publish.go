package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/solar-pipeline/solar/renderer/chart"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// Actions a chart can get.
const (
	Create    = "create"    // the repository has no version yet
	Update    = "update"    // the content changed: the next patch version
	Unchanged = "unchanged" // the latest version has this content
)

// Options configures a publish.
type Options struct {
	// Registry is HOST[:PORT][/PREFIX], the base of the oci:// URLs in bootstrap
	// charts. Empty: each Target's render registry hostname.
	Registry string
	// DryRun computes versions and actions without writing.
	DryRun bool
	// Concurrency bounds the charts published at once; 0 means GOMAXPROCS.
	Concurrency int
	Package     chart.Options
}

// Report is the outcome of a publish, in the shape of the CLI's -o json.
type Report struct {
	Targets  []TargetReport `json:"targets"`
	Problems diag.List      `json:"problems"`
}

// TargetReport is one Target's bootstrap chart and its release charts.
type TargetReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	ChartReport
	Releases []ReleaseReport  `json:"releases"`
	Excluded []ExcludedReport `json:"excluded"`
}

// ChartReport is where a chart went and what happened to it.
type ChartReport struct {
	// Repository is the path inside the registry, without the host.
	Repository string `json:"repository"`
	Version    string `json:"version"`
	// Digest is the manifest digest.
	Digest string `json:"digest"`
	Action string `json:"action"`
}

// ReleaseReport is one release chart of a Target.
type ReleaseReport struct {
	Key     string `json:"key"`
	Release string `json:"release"`
	ChartReport
}

// ExcludedReport is a release a Target does not get.
type ExcludedReport struct {
	Release string `json:"release"`
	Reason  string `json:"reason"`
}

// Publish writes the charts of every Target of the plan that resolved without
// errors: all release charts first, then the bootstrap charts naming them, so a
// bootstrap chart never names a missing chart. Targets with problems are
// skipped and their problems reported. An error returned is a failure of the
// store, not of the input; the report then holds what was done before it.
func Publish(ctx context.Context, store Store, plan *resolve.Plan, opts Options) (*Report, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = runtime.GOMAXPROCS(0)
	}
	p := &publisher{store: store, opts: opts}
	report := &Report{Targets: []TargetReport{}, Problems: diag.List{}}
	var targets []*resolve.Target
	for _, t := range plan.Targets {
		if t.Problems.HasErrors() {
			report.Problems = append(report.Problems, t.Problems...)
			continue
		}
		targets = append(targets, t)
	}

	// Release charts, each once: the Targets of a namespace share them.
	var repos []string
	sels := map[string]*resolve.Selected{}
	for _, t := range targets {
		for _, sel := range t.Releases {
			repo := chart.ReleaseRepository(t.Target.Namespace, sel.Release.Namespace, sel.Release.Name)
			if _, ok := sels[repo]; !ok {
				sels[repo] = sel
				repos = append(repos, repo)
			}
		}
	}
	released := make([]ChartReport, len(repos))
	err := p.each(ctx, len(repos), func(ctx context.Context, i int) (err error) {
		released[i], err = p.chart(ctx, repos[i], chart.Release(sels[repos[i]]))
		return err
	})
	if err != nil {
		return report, err
	}
	p.released = map[string]ChartReport{}
	for i, repo := range repos {
		p.released[repo] = released[i]
	}

	reports := make([]TargetReport, len(targets))
	err = p.each(ctx, len(targets), func(ctx context.Context, i int) (err error) {
		reports[i], err = p.target(ctx, targets[i])
		return err
	})
	for _, tr := range reports {
		if tr.Action != "" {
			report.Targets = append(report.Targets, tr)
		}
	}
	return report, err
}

// each runs fn for 0..n-1 on at most Concurrency goroutines and returns the
// first error; the others then stop.
func (p *publisher) each(ctx context.Context, n int, fn func(context.Context, int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.Concurrency)
	for i := range n {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return fn(ctx, i)
		})
	}
	return g.Wait()
}

type publisher struct {
	store Store
	opts  Options
	// released are the release charts by repository, published before any
	// bootstrap chart.
	released map[string]ChartReport
}

func (p *publisher) target(ctx context.Context, t *resolve.Target) (TargetReport, error) {
	tt := t.Target
	tr := TargetReport{Namespace: tt.Namespace, Name: tt.Name, Releases: []ReleaseReport{}, Excluded: []ExcludedReport{}}
	registry := p.opts.Registry
	if registry == "" {
		registry = t.RenderRegistry.Spec.Hostname
	}
	refs := make([]chart.Ref, len(t.Releases))
	values := make([]map[string]any, len(t.Releases))
	for i, sel := range t.Releases {
		repo := chart.ReleaseRepository(tt.Namespace, sel.Release.Namespace, sel.Release.Name)
		cr := p.released[repo]
		refs[i] = chart.Ref{URL: chart.URL(registry, repo), Version: cr.Version}
		values[i] = chart.TargetValues(sel)
		tr.Releases = append(tr.Releases, ReleaseReport{Key: sel.Key, Release: resolve.Name(sel.Release), ChartReport: cr})
	}
	for _, e := range t.Excluded {
		tr.Excluded = append(tr.Excluded, ExcludedReport{Release: resolve.Name(e.Release), Reason: e.Reason})
	}
	cr, err := p.chart(ctx, chart.BootstrapRepository(tt.Namespace, tt.Name), chart.Bootstrap(t, refs, values))
	if err != nil {
		return TargetReport{}, err
	}
	tr.ChartReport = cr
	return tr, nil
}

// maxAttempts bounds how often a chart moves to the next version because
// another writer took the one it pushed.
const maxAttempts = 5

// chart publishes one chart to a repository at the version its content needs:
// the latest version when its layer is the same (nothing is written), else the
// next patch version. After pushing, it confirms the tag holds its manifest:
// when another writer took that version with other content, it pushes again at
// the next free version, so neither update is lost.
func (p *publisher) chart(ctx context.Context, repoName string, src *chart.Source) (ChartReport, error) {
	cr := ChartReport{Repository: repoName}
	fail := func(doing string, err error) (ChartReport, error) {
		return cr, fmt.Errorf("%s %s: %w", doing, repoName, explain(err, p.opts.Registry, repoName))
	}
	repo, err := p.store.Repository(ctx, repoName)
	if err != nil {
		return fail("opening", err)
	}
	latest, err := latestVersion(ctx, repo)
	if err != nil {
		return fail("listing the versions of", err)
	}
	version, action := semver.New(0, 0, 1, "", ""), Create
	if latest != nil {
		pkg, err := src.Package(latest.Original(), p.opts.Package)
		if err != nil {
			return cr, err
		}
		desc, layer, err := latestLayer(ctx, repo, latest.Original())
		if err != nil {
			return fail("reading version "+latest.Original()+" of", err)
		}
		if layer == pkg.Layer.Digest.String() {
			cr.Version, cr.Digest, cr.Action = latest.Original(), desc.Digest.String(), Unchanged
			return cr, nil
		}
		next := latest.IncPatch()
		version, action = &next, Update
	}
	for attempt := 1; ; attempt++ {
		pkg, err := src.Package(version.String(), p.opts.Package)
		if err != nil {
			return cr, err
		}
		staged, manifest, err := stage(ctx, pkg, p.opts.Package.ModTime)
		if err != nil {
			return fail("packing", err)
		}
		cr.Version, cr.Digest, cr.Action = version.String(), manifest.Digest.String(), action
		if p.opts.DryRun {
			return cr, nil
		}
		// A registry scopes blobs by repository: in one without versions none
		// can be there yet, so do not ask for each. A layout shares blobs.
		_, registryRepo := repo.(*remote.Repository)
		if err := push(ctx, staged, repo, manifest, cr.Version, latest != nil || !registryRepo); err != nil {
			return fail("pushing version "+cr.Version+" to", err)
		}
		got, err := repo.Resolve(ctx, cr.Version)
		if err != nil {
			return fail("confirming version "+cr.Version+" of", err)
		}
		if got.Digest == manifest.Digest {
			return cr, nil
		}
		if attempt == maxAttempts {
			return cr, fmt.Errorf("publishing %s: another writer took the version solar pushed %d times in a row; nothing was lost, run again", repoName, maxAttempts)
		}
		slog.Warn("another writer took the version; pushing the next one", "repository", repoName, "version", cr.Version)
		if latest, err = latestVersion(ctx, repo); err != nil {
			return fail("listing the versions of", err)
		}
		next := latest.IncPatch()
		version, action = &next, Update
	}
}

// push uploads the blobs the repository lacks (all of them without checking
// when check is false) and then the manifest under the tag.
func push(ctx context.Context, staged content.ReadOnlyStorage, repo Repository, manifest ocispec.Descriptor, tag string, check bool) error {
	b, err := content.FetchAll(ctx, staged, manifest)
	if err != nil {
		return err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		if check {
			exists, err := repo.Exists(ctx, d)
			if err != nil {
				return err
			}
			if exists {
				continue
			}
		}
		rc, err := staged.Fetch(ctx, d)
		if err != nil {
			return err
		}
		err = repo.Push(ctx, d, rc)
		rc.Close()
		if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return err
		}
	}
	// A registry takes the manifest and its tag in one request.
	if rp, ok := repo.(registry.ReferencePusher); ok {
		return rp.PushReference(ctx, manifest, bytes.NewReader(b), tag)
	}
	exists, err := repo.Exists(ctx, manifest)
	if err != nil {
		return err
	}
	if !exists {
		if err := repo.Push(ctx, manifest, bytes.NewReader(b)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return err
		}
	}
	return repo.Tag(ctx, manifest, tag)
}

// latestVersion is the highest semver tag of the repository, nil if none or
// if the repository does not exist yet.
func latestVersion(ctx context.Context, repo Repository) (*semver.Version, error) {
	var latest *semver.Version
	err := repo.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			v, err := semver.StrictNewVersion(t)
			if err == nil && (latest == nil || v.GreaterThan(latest)) {
				latest = v
			}
		}
		return nil
	})
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if err != nil && !errors.Is(err, errdef.ErrNotFound) {
		return nil, err
	}
	return latest, nil
}

// latestLayer returns the manifest descriptor of a tag and the digest of its
// chart layer, in one request where the store can.
func latestLayer(ctx context.Context, repo Repository, tag string) (ocispec.Descriptor, string, error) {
	var desc ocispec.Descriptor
	var b []byte
	var err error
	if rf, ok := repo.(registry.ReferenceFetcher); ok {
		var rc io.ReadCloser
		desc, rc, err = rf.FetchReference(ctx, tag)
		if err != nil {
			return desc, "", err
		}
		defer rc.Close()
		b, err = content.ReadAll(rc, desc)
	} else {
		if desc, err = repo.Resolve(ctx, tag); err != nil {
			return desc, "", err
		}
		b, err = content.FetchAll(ctx, repo, desc)
	}
	if err != nil {
		return desc, "", err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return desc, "", fmt.Errorf("decoding manifest: %w", err)
	}
	for _, l := range m.Layers {
		if l.MediaType == chart.LayerMediaType {
			return desc, l.Digest.String(), nil
		}
	}
	return desc, "", nil
}

// stage puts the chart's blobs and manifest into a memory store, from which
// oras.Copy pushes whatever the repository lacks. The manifest has only
// content-derived annotations and the fixed creation time.
func stage(ctx context.Context, pkg *chart.Packaged, modTime time.Time) (*memory.Store, ocispec.Descriptor, error) {
	if modTime.IsZero() {
		modTime = time.Unix(0, 0)
	}
	mem := memory.New()
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{pkg.ConfigDesc, pkg.Config}, {pkg.Layer, pkg.Archive}} {
		if err := mem.Push(ctx, b.desc, bytes.NewReader(b.data)); err != nil {
			return nil, ocispec.Descriptor{}, err
		}
	}
	desc, err := oras.PackManifest(ctx, mem, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		ConfigDescriptor: &pkg.ConfigDesc,
		Layers:           []ocispec.Descriptor{pkg.Layer},
		ManifestAnnotations: map[string]string{
			ocispec.AnnotationCreated: modTime.UTC().Format(time.RFC3339),
			ocispec.AnnotationTitle:   pkg.Name,
			ocispec.AnnotationVersion: pkg.Version,
		},
	})
	return mem, desc, err
}
