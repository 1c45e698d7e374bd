package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/chart"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/resolve"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/validate"
)

// Options configure a plan and its run, by stage, as the CLI's flags are
// grouped. The zero value reads nothing: Paths is required.
type Options struct {
	LoadOptions
	ResolveOptions
	CredentialOptions
	PublishOptions
	// DryRun reads the credentials and the store and writes neither.
	DryRun bool
	// Progress, when set, is called after each Target's bootstrap chart, one
	// call at a time; a batched run also calls it with an empty TargetReport
	// when only the total changed (a batch none of whose Targets resolved).
	Progress func(done, total int, t TargetReport)
	// Log gets what the stages say; nil: slog's default.
	Log *slog.Logger
}

// LoadOptions say what is read and how it is validated.
type LoadOptions struct {
	// Paths are the files and directories of objects.
	Paths []string
	// Objects, when set, are the input instead of Paths' files: the
	// controller's objects, read from the API server.
	Objects []*load.Object
	// Namespace is the namespace of objects that set none (default
	// "default"); when set, only its Targets are planned.
	Namespace string
	// PolicyDirs are directories of CUE policies added to the embedded ones.
	PolicyDirs []string
	// CacheDir holds what validation found, so a run on objects already
	// checked skips their CUE steps (validate.Options); empty: no cache.
	CacheDir string
	// Exclude, Strict, Stdin and MaxFileSize are load.Options': what to
	// leave out of walked directories, whether objects of other API groups
	// are errors, what the path "-" reads, and the largest file read.
	// Strict also makes validation's warnings errors (validate.Options): a
	// Profile that matches no Target, a Target that gets no release, a
	// number in values that reads otherwise than written.
	Exclude     []string
	Strict      bool
	Stdin       io.Reader
	MaxFileSize int64
}

// ResolveOptions say which Targets are planned and how they resolve.
type ResolveOptions struct {
	// Target, when set, plans only the Target of this name.
	Target string
	// Selector, when set and not empty, plans only the Targets whose labels
	// it matches (kubectl's -l). The Targets it leaves out are still in the
	// input, never orphans; a run with a Selector, as one of a Target, looks
	// for no orphans: a Target no longer in the input has no labels to match.
	Selector labels.Selector
	// StrictRegistryBindings makes a registry without a RegistryBinding an
	// error.
	StrictRegistryBindings bool
	// Registry is HOST[:PORT][/PREFIX], the base of the URLs in bootstrap
	// charts (names are bounded with its prefix). Empty: each Target's
	// render registry hostname.
	Registry string
	// Batch makes NewPlan leave the Targets unresolved and Run resolve,
	// render and publish them whole namespaces at a time, up to
	// BatchTargets Targets (a larger namespace alone), and let each batch
	// go when it is done: a run holds the resolutions, charts and publish
	// state of one batch (publishing to a registry, of up to 4: the next
	// begins while one waits its settles), not of the whole input. The
	// outputs are the same.
	Batch bool
}

// CredentialOptions say where the agent credentials are minted.
type CredentialOptions struct {
	// Kubeconfig is the kubeconfig file of the SolAr API server; when set,
	// the agent credentials are synced there.
	Kubeconfig string
	// RESTConfig, when set, is that API server's connection instead of a
	// Kubeconfig file (the controller's own).
	RESTConfig *rest.Config
	// CredentialCache, when set, is where the minter reads what it checks
	// (the controller's informers): an unchanged Target costs no request.
	CredentialCache *credential.Cache
	// WrapTransport, when set, wraps the HTTP transport of the connection
	// read from Kubeconfig (solar --debug logs every request).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// NoCredentials renders agent Releases without a kubeconfig (a demo, an
	// offline review). Otherwise a Target whose agent credential is not
	// issued fails: it keeps its previous bootstrap chart.
	NoCredentials bool
	// ImportedReports, when set, reads the TargetReports imported from
	// sites' report archives (sitereport.Reports.Report): the rollout gates
	// read a Target's report there first, then from the API server
	// (status.Options.Imported).
	ImportedReports func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error)
}

// PublishOptions say how the charts are packaged and published.
type PublishOptions struct {
	// Settle, Concurrency and SigningKey are publish.Options'. Settle is
	// DefaultSettle when zero and Run writes to a registry; negative: none.
	Settle      time.Duration
	Concurrency int
	SigningKey  *sign.Key
	Package     chart.Options
	// Prune publishes, for every orphan (a bootstrap repository of a Target
	// no longer in the input), a next version without releases: Flux then
	// uninstalls them.
	Prune bool
	// Compare keeps the old and new layers of what changes, for Diff.
	Compare bool
	// Full asks every repository the full way (its versions, its latest
	// manifest) instead of trusting the namespaces' indexes, and lists the
	// namespaces' repositories; the indexes are written all the same. In a
	// layout it also reads back every blob of the versions it finds
	// unchanged, and writes a damaged or missing one again
	// (publish.Options.Repair).
	Full bool
	// Now is the time a Rollout's pass decides at, and the time the update
	// windows of DeviceUpgrades are picked at (zero: time.Now).
	Now time.Time
}

func (o Options) log() *slog.Logger {
	if o.Log == nil {
		return slog.Default()
	}
	return o.Log
}

// Plan is what every selected Target gets.
type Plan struct {
	Targets []*Target
	// Problems are those of loading and validating; each Target has its own.
	Problems diag.List
	// all are the namespaces and names of every Target of the input,
	// selected or not: a bootstrap repository of none of them is an orphan.
	all map[load.ID]bool
	// app are the PipelineConfig's settings of the application
	// HelmReleases, which every release chart carries.
	app chart.AppOptions
	// rollouts are the input's Rollouts, which gate the bootstrap charts
	// of the Targets they govern.
	rollouts []*governing
	// lazy, with Options.Batch, holds the selected Targets that Run
	// resolves and publishes a batch at a time; Targets is then empty.
	lazy *lazyPlan
}

// Target is a resolved Target and its agent credential.
type Target struct {
	*resolve.Resolution
	// Credential is the agent credential's condition, when the Target gets
	// an agent Release.
	Credential *credential.Credential
}

// Load reads and validates the objects of opts.Paths, and resolves them to
// find what only resolving can (a valuesTemplate is rendered for every
// Target bound to it): the problems are sorted, the set is nil when they hold
// an error.
func Load(opts Options) (*model.Set, diag.List, error) {
	set, problems, err := loadSet(opts, false)
	if err != nil || set == nil {
		return set, problems, err
	}
	resolver, err := resolve.NewResolver(set, resolve.Options{StrictRegistryBindings: opts.StrictRegistryBindings})
	if err != nil {
		return nil, problems, err
	}
	// One Target's resolution at a time: only its problems are kept.
	for _, t := range set.Targets {
		problems = append(problems, resolver.Resolve(t).Problems...)
	}
	problems = problems.Sorted()
	if problems.HasErrors() {
		return nil, problems, nil
	}
	return set, problems, nil
}

// loadSet is Load; scoped, the problems of objects that opts.Namespace does
// not use are warnings.
func loadSet(opts Options, scoped bool) (*model.Set, diag.List, error) {
	v, err := validate.New(validate.Options{PolicyDirs: opts.PolicyDirs, CacheDir: opts.CacheDir, CacheReadOnly: opts.DryRun,
		Strict: opts.Strict})
	if err != nil {
		return nil, nil, err
	}
	objs, problems, skipped := opts.Objects, diag.List(nil), load.Skipped{}
	if objs == nil {
		// Each group of files is checked as it is read (v.Check): a Target
		// that passed stays as its typed form only, unless a policy of the
		// user's reads every object.
		if len(opts.PolicyDirs) > 0 {
			opts.log().Info("--policy: the policies see every object whole, so the input is held as read until validated")
		}
		objs, problems, skipped = load.Paths(opts.Paths, load.Options{Namespace: cmp.Or(opts.Namespace, "default"),
			Exclude: opts.Exclude, Strict: opts.Strict, Stdin: opts.Stdin, MaxFileSize: opts.MaxFileSize, Each: v.Check})
	}
	if s := skipped.String(); s != "" {
		opts.log().Info("skipped " + s)
	}
	if len(objs) == 0 && !problems.HasErrors() {
		msg := fmt.Sprintf("no Solar objects found (apiVersion %s/v1alpha1)", api.Group)
		if s := skipped.String(); s != "" {
			msg += "; skipped " + s
		}
		problems.Errorf(strings.Join(opts.Paths, " "), 0, "", "%s", msg)
	}
	set, more := v.Finish(objs)
	problems = append(problems, more...)
	if scoped && opts.Namespace != "" {
		problems = scope(opts.Namespace, objs, problems)
	}
	problems = problems.Sorted()
	errs := 0
	for _, p := range problems {
		if p.Severity == diag.Error {
			errs++
		}
	}
	opts.log().Info("loaded", "objects", len(objs), "errors", errs, "warnings", len(problems)-errs)
	if problems.HasErrors() {
		return nil, problems, nil
	}
	return set, problems, nil
}

// NewPlan loads, validates and resolves, keeps the Targets opts selects and,
// with opts.Kubeconfig, syncs their agent credentials. A plan without Targets
// and with problems is invalid input; an error is a failure to run.
func NewPlan(ctx context.Context, opts Options) (*Plan, error) {
	set, problems, err := loadSet(opts, true)
	plan := &Plan{Problems: problems}
	if err != nil || set == nil {
		return plan, err
	}
	if plan.app, err = chart.AppOptionsFrom(set); err != nil {
		return plan, err
	}
	if plan.rollouts, err = rolloutsOf(set); err != nil {
		return plan, err
	}
	_, prefix, _ := strings.Cut(opts.Registry, "/")
	resolver, err := resolve.NewResolver(set, resolve.Options{StrictRegistryBindings: opts.StrictRegistryBindings, RegistryPrefix: prefix})
	if err != nil {
		return plan, err
	}
	plan.all = map[load.ID]bool{}
	var selected []*model.Target
	for _, t := range set.Targets {
		plan.all[targetID(t.Namespace, t.Name)] = true
		if opts.selects(t) {
			selected = append(selected, t)
		}
	}
	if sel := opts.selection(); len(selected) == 0 && sel != "" {
		plan.Problems.Errorf(strings.Join(opts.Paths, " "), 0, "", "no Target matches %s", sel)
		return plan, nil
	}
	creds, err := newCredentials(set, opts)
	if err != nil {
		return plan, err
	}
	if opts.Batch {
		plan.lazy = &lazyPlan{resolver: resolver, creds: creds, selected: selected}
		return plan, nil
	}
	plan.Targets = resolveTargets(resolver, selected)
	creds.sync(ctx, plan.Targets)
	return plan, nil
}

// resolveTargets are the resolutions of targets.
func resolveTargets(r *resolve.Resolver, targets []*model.Target) []*Target {
	out := make([]*Target, len(targets))
	for i, t := range targets {
		out[i] = &Target{Resolution: r.Resolve(t)}
	}
	return out
}

// kubeconfig is what the chart of a selected release carries: the Target's
// kubeconfig for an agent Release, when its credential has one.
func (t *Target) kubeconfig(sel *resolve.Selected) []byte {
	if t.Credential == nil || !credential.Wanted(sel.Release) {
		return nil
	}
	return t.Credential.Kubeconfig
}

// job is the chart of a selected release of t: the Target's own agent chart
// when it carries a kubeconfig, else the release chart of the namespace.
func (p *Plan) job(t *Target, sel *resolve.Selected) chart.Job {
	if kubeconfig := t.kubeconfig(sel); kubeconfig != nil {
		return chart.AgentJob(t.Resolution, sel, p.app, kubeconfig)
	}
	return chart.ReleaseJob(t.Resolution, sel, p.app)
}

// targetID is the identity of Target ns/name.
func targetID(ns, name string) load.ID {
	return load.ID{Kind: api.KindTarget, Namespace: ns, Name: name}
}

// Targets lists the Targets of opts.Paths without validating anything: for
// shell completion.
func Targets(opts LoadOptions) []load.ID {
	objs, _, _ := load.Paths(opts.Paths, load.Options{Namespace: cmp.Or(opts.Namespace, "default"),
		Exclude: opts.Exclude, MaxFileSize: opts.MaxFileSize})
	var out []load.ID
	for _, o := range objs {
		if o.Kind == api.KindTarget && o.Name != "" {
			out = append(out, o.ID())
		}
	}
	return out
}
