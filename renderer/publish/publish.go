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
	"slices"
	"sync"
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
	"github.com/solar-pipeline/solar/renderer/credential"
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
	// Settle is how long after pushing solar confirms its tags: longer than a
	// concurrent writer may take between checking a tag and pushing it.
	Settle time.Duration
	// Concurrency bounds the charts published at once; 0 means GOMAXPROCS.
	Concurrency int
	// Credentials are the agent credentials by Target ("<ns>/<name>"). A Target
	// with an issued one gets its own agent release chart with its kubeconfig.
	Credentials map[string]*credential.Credential
	// Log gets warnings (another writer took a version); nil: slog's default.
	Log *slog.Logger
	// Progress, when set, is called after each Target, one call at a time.
	Progress func(done, total int, t TargetReport)
	Package  chart.Options
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
	// Credential is the agent credential's condition, when the Target gets one.
	Credential *credential.Credential `json:"credential,omitempty"`
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
	if opts.Log == nil {
		opts.Log = slog.Default()
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

	// Release charts, each once: the Targets of a namespace share them (but
	// for agent charts, which carry one Target's kubeconfig).
	var jobs []job
	seen := map[string]bool{}
	for _, t := range targets {
		for _, sel := range t.Releases {
			if repo := p.releaseRepo(t, sel); !seen[repo] {
				seen[repo] = true
				jobs = append(jobs, p.releaseJob(t, sel))
			}
		}
	}
	released, err := p.charts(ctx, jobs, nil)
	if err != nil {
		return report, err
	}
	p.released = map[string]ChartReport{}
	for i, j := range jobs {
		p.released[j.repo] = released[i]
	}

	// Then the bootstrap charts, which name the release charts' versions.
	reports := make([]TargetReport, len(targets))
	jobs = make([]job, len(targets))
	for i, t := range targets {
		reports[i], jobs[i] = p.target(t)
	}
	var mu sync.Mutex
	done := 0
	boot, err := p.charts(ctx, jobs, func(i int, cr ChartReport) {
		if opts.Progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		tr := reports[i]
		tr.ChartReport = cr
		opts.Progress(done, len(jobs), tr)
	})
	for i, tr := range reports {
		if boot[i].Action != "" {
			tr.ChartReport = boot[i]
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

// agentKubeconfig is the kubeconfig a selected release of a Target carries:
// set for an agent Release of a Target with an issued credential.
func (p *publisher) agentKubeconfig(t *resolve.Target, sel *resolve.Selected) []byte {
	cred := p.opts.Credentials[t.Target.Namespace+"/"+t.Target.Name]
	if cred == nil || !credential.Wanted(sel.Release) {
		return nil
	}
	return cred.Kubeconfig
}

// releaseRepo is the repository of a selected release's chart for a Target.
func (p *publisher) releaseRepo(t *resolve.Target, sel *resolve.Selected) string {
	tt, r := t.Target, sel.Release
	if p.agentKubeconfig(t, sel) != nil {
		return chart.AgentRepository(tt.Namespace, tt.Name, r.Namespace, r.Name)
	}
	return chart.ReleaseRepository(tt.Namespace, r.Namespace, r.Name)
}

// releaseJob publishes a selected release's chart for a Target.
func (p *publisher) releaseJob(t *resolve.Target, sel *resolve.Selected) job {
	if kubeconfig := p.agentKubeconfig(t, sel); kubeconfig != nil {
		return job{repo: p.releaseRepo(t, sel), src: chart.Agent(sel, t.Target.Name, kubeconfig)}
	}
	return job{repo: p.releaseRepo(t, sel), src: chart.Release(sel)}
}

// target is the report of a Target without its bootstrap chart, and the job
// that publishes that chart.
func (p *publisher) target(t *resolve.Target) (TargetReport, job) {
	tt := t.Target
	tr := TargetReport{Namespace: tt.Namespace, Name: tt.Name, Releases: []ReleaseReport{}, Excluded: []ExcludedReport{}}
	registry := p.opts.Registry
	if registry == "" {
		registry = t.RenderRegistry.Spec.Hostname
	}
	refs := make([]chart.Ref, len(t.Releases))
	values := make([]map[string]any, len(t.Releases))
	tr.Credential = p.opts.Credentials[tt.Namespace+"/"+tt.Name]
	for i, sel := range t.Releases {
		repo := p.releaseRepo(t, sel)
		cr := p.released[repo]
		refs[i] = chart.Ref{URL: chart.URL(registry, repo), Version: cr.Version}
		values[i] = chart.TargetValues(sel)
		tr.Releases = append(tr.Releases, ReleaseReport{Key: sel.Key, Release: resolve.Name(sel.Release), ChartReport: cr})
	}
	for _, e := range t.Excluded {
		tr.Excluded = append(tr.Excluded, ExcludedReport{Release: resolve.Name(e.Release), Reason: e.Reason})
	}
	return tr, job{repo: chart.BootstrapRepository(tt.Namespace, tt.Name), src: chart.Bootstrap(t, refs, values)}
}

// maxAttempts bounds how often a chart is pushed again because another writer
// took the version it pushed.
const maxAttempts = 5

// errTaken: the version was tagged by someone else between deciding and pushing.
var errTaken = errors.New("version taken by another writer")

// job is one chart to publish.
type job struct {
	repo string
	src  *chart.Source
}

// charts publishes the jobs, then confirms, once Settle has passed, that every
// pushed tag still holds what was pushed. A registry has no compare-and-swap:
// when another writer overwrote a tag (it checked just before this push), the
// chart is published again, at the next version, unless the other writer's
// content equals it. So no update is lost and no version ends up naming two
// contents, unless a writer stalls longer than Settle between its check and
// its push.
// done, when set, is called after each chart of the first round.
func (p *publisher) charts(ctx context.Context, jobs []job, done func(i int, cr ChartReport)) ([]ChartReport, error) {
	results := make([]ChartReport, len(jobs))
	pending := make([]int, len(jobs))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 1; len(pending) > 0; attempt++ {
		err := p.each(ctx, len(pending), func(ctx context.Context, k int) (err error) {
			i := pending[k]
			results[i], err = p.chart(ctx, jobs[i].repo, jobs[i].src)
			if err == nil && attempt == 1 && done != nil {
				done(i, results[i])
			}
			return err
		})
		if err != nil || p.opts.DryRun {
			return results, err
		}
		var pushed []int
		for _, i := range pending {
			if results[i].Action != Unchanged {
				pushed = append(pushed, i)
			}
		}
		if len(pushed) == 0 {
			return results, nil
		}
		select {
		case <-time.After(p.opts.Settle):
		case <-ctx.Done():
			return results, ctx.Err()
		}
		lost := make([]bool, len(pushed))
		err = p.each(ctx, len(pushed), func(ctx context.Context, k int) error {
			i := pushed[k]
			repo, err := p.store.Repository(ctx, jobs[i].repo)
			if err != nil {
				return err
			}
			got, err := repo.Resolve(ctx, results[i].Version)
			if err != nil {
				return fmt.Errorf("confirming version %s of %s: %w", results[i].Version, jobs[i].repo, explain(err, p.opts.Registry, jobs[i].repo))
			}
			lost[k] = got.Digest.String() != results[i].Digest
			return nil
		})
		if err != nil {
			return results, err
		}
		pending = pending[:0]
		for k, i := range pushed {
			if lost[k] {
				p.opts.Log.Warn("another writer overwrote the version solar pushed; publishing again", "repository", jobs[i].repo, "version", results[i].Version)
				pending = append(pending, i)
			}
		}
		if len(pending) > 0 && attempt == maxAttempts {
			return results, fmt.Errorf("publishing %s: another writer overwrote the version solar pushed %d times in a row; run again", jobs[pending[0]].repo, maxAttempts)
		}
	}
	return results, nil
}

// chart publishes one chart to a repository at the version its content needs:
// the latest version when its layer is the same (nothing is written), else the
// next patch version, skipping versions another writer takes meanwhile.
func (p *publisher) chart(ctx context.Context, repoName string, src *chart.Source) (ChartReport, error) {
	cr := ChartReport{Repository: repoName}
	fail := func(doing string, err error) (ChartReport, error) {
		return cr, fmt.Errorf("%s %s: %w", doing, repoName, explain(err, p.opts.Registry, repoName))
	}
	repo, err := p.store.Repository(ctx, repoName)
	if err != nil {
		return fail("opening", err)
	}
	check := false
	for attempt := 1; ; attempt++ {
		latest, err := latestVersion(ctx, repo)
		if err != nil {
			return fail("listing the versions of", err)
		}
		version, action := "0.0.1", Create
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
			version, action = latest.IncPatch().String(), Update
		}
		pkg, err := src.Package(version, p.opts.Package)
		if err != nil {
			return cr, err
		}
		staged, manifest, err := stage(ctx, pkg, p.opts.Package.ModTime)
		if err != nil {
			return fail("packing", err)
		}
		cr.Version, cr.Digest, cr.Action = version, manifest.Digest.String(), action
		if p.opts.DryRun {
			return cr, nil
		}
		// A registry scopes blobs by repository: in one without versions none
		// can be there yet, so do not ask for each. A layout shares blobs.
		_, registryRepo := repo.(*remote.Repository)
		err = push(ctx, staged, repo, manifest, version, check || latest != nil || !registryRepo)
		if (errors.Is(err, errTaken) || blobUnknown(err)) && attempt < maxAttempts {
			// A blob another writer uploaded at the same moment may be lost
			// to a registry race: check each blob next time.
			check = true
			continue
		}
		if err != nil {
			return fail("pushing version "+version+" to", err)
		}
		return cr, nil
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
	// The tag must still be free: another writer may have taken it since the
	// versions were listed.
	if _, err := repo.Resolve(ctx, tag); err == nil {
		return errTaken
	} else if !isNotFound(err) {
		return err
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
	if err != nil && !isNotFound(err) {
		return nil, err
	}
	return latest, nil
}

// blobUnknown: the registry lost a blob of the manifest, as docker-registry
// does when two writers upload the same blob into one repository at once.
func blobUnknown(err error) bool {
	var resp *errcode.ErrorResponse
	return errors.As(err, &resp) && slices.ContainsFunc(resp.Errors, func(e errcode.Error) bool {
		return e.Code == errcode.ErrorCodeManifestBlobUnknown || e.Code == errcode.ErrorCodeBlobUnknown
	})
}

// isNotFound: the store does not have it (a layout says so with an error, a
// registry with a 404).
func isNotFound(err error) bool {
	var resp *errcode.ErrorResponse
	return errors.Is(err, errdef.ErrNotFound) || (errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound)
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
