package publish

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/solar-pipeline/solar/internal/settle"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Actions a job can get.
const (
	Create    = "create"    // the repository has no version yet
	Update    = "update"    // the content changed: the next patch version
	Unchanged = "unchanged" // the latest version has this content
)

// Epoch is the creation time of what solar packs when SOURCE_DATE_EPOCH
// sets none: fixed, so that the same content gives the same digest.
var Epoch = time.Unix(0, 0).UTC()

// SourceDateEpoch is SOURCE_DATE_EPOCH, the reproducible-builds convention
// for the created time of what solar packs; ok is false when it is unset.
func SourceDateEpoch() (created time.Time, ok bool, err error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Time{}, false, nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, false, fmt.Errorf("invalid SOURCE_DATE_EPOCH %q: want seconds since 1970 as an integer", v)
	}
	return time.Unix(sec, 0).UTC(), true, nil
}

// Created is the value of an artifact's creation-time annotation for t, or
// for Epoch when t is zero.
func Created(t time.Time) string {
	if t.IsZero() {
		t = Epoch
	}
	return t.UTC().Format(time.RFC3339)
}

// Blob is one blob of an artifact with its descriptor.
type Blob struct {
	Desc ocispec.Descriptor
	Data []byte
}

// NewBlob describes data of a media type.
func NewBlob(mediaType string, data []byte) Blob {
	return Blob{Desc: ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}, Data: data}
}

// Artifact is the content of one version of a job: an OCI manifest's config,
// layers and annotations. Annotations must derive from the content alone, so
// that the same content gives the same manifest digest.
type Artifact struct {
	// ArtifactType is the manifest's artifactType ("": none, as a Helm
	// chart's).
	ArtifactType string
	Config       Blob
	Layers       []Blob
	Annotations  map[string]string
}

// Job is one artifact to publish into a repository of the store.
type Job struct {
	// Repository is the repository's name in the store.
	Repository string
	// Pack returns the artifact at a version. The content may carry its
	// version (a Helm chart's Chart.yaml does); its layers are compared with
	// the latest version's to decide whether anything changed.
	Pack func(version string) (*Artifact, error)
	// Key, when set, identifies the content Pack gives at any version (a
	// digest of its inputs; "" for none): with Options.PackCache, an
	// unchanged job is then compared without packing. It is called once per
	// publish of the job, on the worker that publishes it.
	Key func() string
}

// Result is where a job went and what happened to it.
type Result struct {
	// Repository is the repository's name in the store.
	Repository string `json:"repository"`
	Version    string `json:"version"`
	// Digest is the manifest digest.
	Digest string `json:"digest"`
	Action string `json:"action"`
	// Signature is the digest of the chart's signature (Options.SigningKey)
	// and SignatureAction whether it was written (Create) or there already
	// (Unchanged).
	Signature       string `json:"signature,omitempty"`
	SignatureAction string `json:"signatureAction,omitempty"`
	// Old and New are the layers of the latest version and of the content
	// (packed at that version, so only the content differs), when
	// Options.Compare asked for them and the content changed.
	Old, New []Blob `json:"-"`
	// built is what only the run that published it reads: the version's
	// manifest and its layers' digests (a pointer: a report of 100,000
	// Targets keeps the rest of 100,000 results).
	built *built
	// indexed: the namespace's index gave it (Options.Index).
	indexed bool
}

// Previous is the version an update replaces ("" for another action).
// Reported is the result as a report of many Targets keeps it: without what
// only the run that published it reads (the manifest and layer digests that
// the namespace indexes are written from).
func (r Result) Reported() Result {
	r.built = nil
	return r
}

// built is a version's manifest, what a signature signs, and the digests
// of its layers, which the namespace indexes are written from.
type built struct {
	manifest ocispec.Descriptor
	layers   []string
}

// manifest is the version's manifest (zero when not kept).
func (r Result) manifest() ocispec.Descriptor {
	if r.built == nil {
		return ocispec.Descriptor{}
	}
	return r.built.manifest
}

// layers are the digests of the version's layers (nil when not kept).
func (r Result) layers() []string {
	if r.built == nil {
		return nil
	}
	return r.built.layers
}

func (r Result) Previous() string {
	if r.Action != Update {
		return ""
	}
	var major, minor, patch int
	if _, err := fmt.Sscanf(r.Version, "%d.%d.%d", &major, &minor, &patch); err != nil || patch == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", major, minor, patch-1)
}

// Options configures a publish. The zero value publishes with GOMAXPROCS
// jobs at once, confirms without waiting and logs to slog's default.
type Options struct {
	// DryRun computes versions and actions without writing.
	DryRun bool
	// Settle is how long after pushing the tags are confirmed: longer than a
	// concurrent writer may take between checking a tag and pushing it.
	Settle time.Duration
	// Concurrency bounds the jobs published at once; 0 means GOMAXPROCS.
	Concurrency int
	// Log gets warnings (another writer took a version).
	Log *slog.Logger
	// Done, when set, is called after each job's first round, one call at a
	// time, with the job's index.
	Done func(i int, r Result)
	// Step, when set, is called by PushLayout after each version pushed.
	Step func(done, total int)
	// Compare fills Result.Old and Result.New, for a diff.
	Compare bool
	// PackCache, when set, remembers the layers of the jobs packed.
	PackCache *PackCache
	// SigningKey, when set, signs every version published (and the latest
	// version of an unchanged job, unless already signed): a sign.Attach
	// referrer, which Flux and cosign verify with the public key.
	SigningKey *sign.Key
	// Verifier, when set, makes PushLayout push nothing unless every
	// version it would push carries a signature that verifies.
	Verifier *sign.Verifier
	// PushLast, when set, names the repositories PushLayout pushes after
	// the others: those whose versions name others' (chain's bootstrap
	// charts name release charts).
	PushLast func(repository string) bool
	// Absent names repositories the store did not have when the run began
	// (its catalog did not list them): their versions are not asked for, a
	// job there starts at 0.0.1. The check right before tagging still finds
	// a version another writer took meanwhile, and the job then asks.
	Absent map[string]bool
	// Index holds the entries of the namespaces' indexes, by repository
	// (ReadIndex): a job whose entry holds what it gives is unchanged
	// without a request. The jobs it does not settle are published the
	// full way after BeforePush.
	Index map[string]Entry
	// Repair reads back, where the store is local (a layout), every blob of
	// a version found unchanged the full way, and writes a damaged or
	// missing one again from what the job packs (a dry run says so):
	// --full. It packs every such job.
	Repair bool
	// BeforePush, when set, is called once, before anything is pushed,
	// with the repositories the index did not settle (Options.Index; for
	// PushLayout, those it pushes): it
	// removes their entries, so that a run killed after pushing them leaves
	// no entry claiming an older version.
	BeforePush func(ctx context.Context, repositories []string) error
}

// maxAttempts bounds how often a job is pushed again because another writer
// took the version it pushed.
const maxAttempts = 5

// Publish publishes every job at the version its content needs, then
// confirms, once Settle has passed, that every pushed tag still holds what was
// pushed. A registry has no compare-and-swap: when another writer overwrote a
// tag (it checked just before this push), the job is published again, at the
// next version, unless the other writer's content equals it. So no update is
// lost and no version ends up naming two contents, unless a writer stalls
// longer than Settle between its check and its push. The results are in the
// order of the jobs; on an error, those done before it are filled in.
func Publish(ctx context.Context, st store.Store, jobs []Job, opts Options) ([]Result, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = runtime.GOMAXPROCS(0)
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	p := &publisher{store: st, opts: opts, keys: make([]*string, len(jobs))}
	results := make([]Result, len(jobs))
	pending, err := p.settle(ctx, jobs, results)
	if err != nil {
		return results, err
	}
	for attempt := 1; len(pending) > 0; attempt++ {
		err := p.each(ctx, len(pending), func(ctx context.Context, k int) (err error) {
			i := pending[k]
			// After the first round the repository has what this run pushed.
			results[i], err = p.publish(ctx, jobs[i], p.key(i, jobs[i]), attempt == 1 && opts.Absent[jobs[i].Repository])
			if err == nil && opts.SigningKey != nil && !opts.DryRun {
				err = p.sign(ctx, &results[i])
			}
			if err == nil && attempt == 1 && opts.Done != nil {
				p.done(i, results[i])
			}
			return err
		})
		if err != nil || opts.DryRun {
			return results, err
		}
		if pending, err = p.confirm(ctx, pending, results); err != nil {
			return results, err
		}
		if len(pending) > 0 && attempt == maxAttempts {
			return results, fmt.Errorf("publishing %s: another writer overwrote the version solar pushed %d times in a row; run again", jobs[pending[0]].Repository, maxAttempts)
		}
	}
	if err := sign.Confirm(ctx, p.signed); err != nil {
		return results, store.Explain(err)
	}
	return results, nil
}

// sign signs r's manifest unless it is signed already, and keeps what it
// wrote for sign.Confirm.
func (p *publisher) sign(ctx context.Context, r *Result) error {
	repo, err := p.store.Repository(ctx, r.Repository)
	if err != nil {
		return err
	}
	t, ok := repo.(sign.Target)
	if !ok {
		return fmt.Errorf("signing %s: the store keeps no signatures", r.Repository)
	}
	attach := sign.Attach
	if r.Action != Unchanged {
		attach = sign.Write // a version just pushed: nothing signed it yet
	}
	desc, w, err := attach(ctx, t, r.subject(), p.opts.SigningKey)
	if err != nil {
		return fmt.Errorf("signing %s:%s: %w", r.Repository, r.Version, store.Explain(err))
	}
	r.Signature, r.SignatureAction = desc.Digest.String(), Unchanged
	if w != nil {
		r.SignatureAction = Create
		p.mu.Lock()
		p.signed = append(p.signed, toConfirm(ctx, t, w)...)
		p.mu.Unlock()
	}
	return nil
}

// toConfirm is what of ws, just written into t, sign.Confirm is to read
// back: nothing where the registry keeps the referrers itself (the
// referrers API; store.ReferrersAPI): its answer to each push said it
// listed the signature, and there is no referrers index another writer's
// read, change and write could drop it from.
func toConfirm(ctx context.Context, t sign.Target, ws ...*sign.Written) []*sign.Written {
	if len(ws) == 0 {
		return nil
	}
	if k, ok := t.(store.ReferrersAPI); ok && k.KeepsReferrers(ctx, ws[0].Subject) {
		return nil
	}
	return ws
}

// subject is what a signature of r signs: its manifest, as its repository
// and version.
func (r *Result) subject() sign.Subject {
	return sign.Subject{Repository: r.Repository, Version: r.Version, Manifest: r.manifest()}
}

// confirm waits Settle and returns the jobs of pending whose pushed tag
// another writer overwrote.
func (p *publisher) confirm(ctx context.Context, pending []int, results []Result) ([]int, error) {
	var pushed []int
	for _, i := range pending {
		if results[i].Action != Unchanged {
			pushed = append(pushed, i)
		}
	}
	if len(pushed) == 0 {
		return nil, nil
	}
	if err := settle.Wait(ctx, p.opts.Settle); err != nil {
		return nil, err
	}
	lost := make([]bool, len(pushed))
	err := p.each(ctx, len(pushed), func(ctx context.Context, k int) error {
		r := results[pushed[k]]
		repo, err := p.store.Repository(ctx, r.Repository)
		if err != nil {
			return err
		}
		got, err := repo.Resolve(ctx, r.Version)
		if err != nil {
			return fmt.Errorf("confirming version %s of %s: %w", r.Version, r.Repository, store.Explain(err))
		}
		lost[k] = got.Digest.String() != r.Digest
		return nil
	})
	if err != nil {
		return nil, err
	}
	var again []int
	for k, i := range pushed {
		if lost[k] {
			p.opts.Log.Warn("another writer overwrote the version solar pushed; publishing again", "repository", results[i].Repository, "version", results[i].Version)
			again = append(again, i)
		}
	}
	return again, nil
}

type publisher struct {
	store  store.Store
	opts   Options
	mu     sync.Mutex // one Done call at a time; signed
	signed []*sign.Written
	// keys are the jobs' keys (Job.Key), each asked once.
	keys []*string
}

// key is job i's key for the pack cache ("" without one), asked once.
func (p *publisher) key(i int, job Job) string {
	if p.opts.PackCache == nil || job.Key == nil {
		return ""
	}
	if p.keys[i] == nil {
		k := job.Key()
		p.keys[i] = &k
	}
	return *p.keys[i]
}

// settle fills the results of the jobs the index settles (Options.Index)
// and returns the others, after BeforePush has seen their repositories.
func (p *publisher) settle(ctx context.Context, jobs []Job, results []Result) ([]int, error) {
	settled := make([]bool, len(jobs))
	if p.opts.Index != nil {
		err := p.each(ctx, len(jobs), func(_ context.Context, i int) error {
			results[i], settled[i] = p.fromIndex(jobs[i], p.key(i, jobs[i]))
			if settled[i] && p.opts.Done != nil {
				p.done(i, results[i])
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var pending []int
	var repos []string
	for i := range jobs {
		if !settled[i] {
			pending = append(pending, i)
			repos = append(repos, jobs[i].Repository)
		}
	}
	if len(repos) > 0 && p.opts.BeforePush != nil && !p.opts.DryRun {
		if err := p.opts.BeforePush(ctx, repos); err != nil {
			return nil, err
		}
	}
	return pending, nil
}

func (p *publisher) done(i int, r Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts.Done(i, r)
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
