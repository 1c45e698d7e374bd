package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// Violation is a broken promise of the store, at one version.
type Violation struct {
	Repository string `json:"repository"`
	Version    string `json:"version"`
	Message    string `json:"message"`
}

func (v Violation) String() string {
	if v.Version == "" {
		return v.Repository + ": " + v.Message
	}
	return v.Repository + ":" + v.Version + ": " + v.Message
}

// plainVersion is the only kind of tag solar writes.
var plainVersion = regexp.MustCompile(`^0\.0\.[1-9][0-9]*$`)

// VerifyOptions say how deep Verify reads.
type VerifyOptions struct {
	// Prefix limits the walk to repositories under it ("alpha/").
	Prefix string
	// Deep downloads and hashes every blob of a registry too; without it a
	// registry's blobs are checked by size (HEAD), its manifests by digest.
	// A layout's blobs are always read: they are on this machine.
	Deep bool
	// Progress, when set, is called after each repository (from one
	// goroutine at a time).
	Progress func(done, total int)
	// Concurrency bounds the repositories checked at once (default 8: the
	// walk waits on the store, not on the CPU).
	Concurrency int
}

// Verified is what Verify checked, and what it found broken.
type Verified struct {
	Violations   []Violation `json:"violations"`
	Repositories int         `json:"repositories"`
	Versions     int         `json:"versions"`
	Blobs        int         `json:"blobs"`
	// Bytes are the bytes read and hashed (blobs checked by size only are
	// not counted).
	Bytes int64 `json:"bytes"`
	// Skipped are the repositories under the prefix that are not solar's
	// charts, such as the fleet's: not checked.
	Skipped []string `json:"skipped"`
}

// ErrNoRepository: no repository under the prefix (a mistyped --out,
// --registry prefix or -n): Verify checked nothing, GC had nothing to
// collect.
var ErrNoRepository = errors.New("no chart repository")

// Verify walks the chart repositories of the store under opts.Prefix and
// checks what solar promises: tags are plain 0.0.N versions; every version's
// manifest and blobs are there, with the digest and size their descriptors
// say; every bootstrap chart version names release chart versions the store
// holds.
func Verify(ctx context.Context, store publish.Store, opts VerifyOptions) (*Verified, error) {
	lister, ok := store.(publish.Lister)
	if !ok {
		return nil, fmt.Errorf("the store cannot list its repositories")
	}
	listed, err := lister.Repositories(ctx, opts.Prefix)
	if err != nil {
		return nil, err
	}
	v := &Verified{}
	var repos []string
	repos, v.Skipped = publish.SplitRepositories(listed, chain.IsChartRepository)
	if len(repos) == 0 && len(v.Skipped) > 0 {
		return nil, fmt.Errorf("%w (only %s, not solar's charts)", ErrNoRepository, strings.Join(v.Skipped, ", "))
	}
	if len(repos) == 0 {
		return nil, ErrNoRepository
	}
	v.Repositories = len(repos)
	// Each repository on its own (a registry answers requests at once):
	// their results are merged in the order of repos.
	parts := make([]Verified, len(repos))
	tags := make([][]string, len(repos))
	var mu sync.Mutex
	done := 0
	err = each(ctx, len(repos), opts.Concurrency, func(ctx context.Context, i int) error {
		var err error
		tags[i], err = parts[i].verifyRepository(ctx, store, repos[i], opts.Deep)
		if err == nil && opts.Progress != nil {
			mu.Lock()
			done++
			opts.Progress(done, len(repos))
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	tagsOf := map[string][]string{}
	for i := range parts {
		v.add(parts[i])
		tagsOf[repos[i]] = tags[i]
	}
	// Bootstrap charts name release charts that must be there.
	refs := make([][]Violation, len(repos))
	err = each(ctx, len(repos), opts.Concurrency, func(ctx context.Context, i int) error {
		if !chain.IsBootstrapRepository(repos[i]) {
			return nil
		}
		repo, err := store.Repository(ctx, repos[i])
		if err != nil {
			return err
		}
		for _, tag := range tags[i] {
			refs[i] = append(refs[i], checkRefs(ctx, repo, repos[i], tag, tagsOf)...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		v.Violations = append(v.Violations, r...)
	}
	return v, nil
}

// verifyRepository checks every version of one repository and returns its
// tags.
func (v *Verified) verifyRepository(ctx context.Context, store publish.Store, name string, deep bool) ([]string, error) {
	repo, err := store.Repository(ctx, name)
	if err != nil {
		return nil, err
	}
	tags, err := publish.Tags(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("listing the versions of %s: %w", name, err)
	}
	for _, tag := range tags {
		v.Versions++
		if !plainVersion.MatchString(tag) {
			v.Violations = append(v.Violations, Violation{name, tag, "not a version solar writes (0.0.N)"})
			continue
		}
		v.verifyVersion(ctx, repo, name, tag, deep)
	}
	return tags, nil
}

// add adds what another part of the walk checked and found.
func (v *Verified) add(o Verified) {
	v.Violations = append(v.Violations, o.Violations...)
	v.Versions += o.Versions
	v.Blobs += o.Blobs
	v.Bytes += o.Bytes
}

// each runs fn for 0..n-1 on at most limit goroutines (8 when 0) and
// returns the first error.
func each(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(cmp.Or(limit, 8))
	for i := range n {
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}

// checkRefs checks that the release chart versions a bootstrap chart version
// names are in the store.
func checkRefs(ctx context.Context, repo publish.Repository, name, tag string, tagsOf map[string][]string) []Violation {
	refs, err := bootstrapRefs(ctx, repo, tag)
	if err != nil {
		return []Violation{{name, tag, "what it names cannot be read: " + err.Error()}}
	}
	var out []Violation
	for _, ref := range refs {
		target := repository(ref.URL, func(name string) bool { _, ok := tagsOf[name]; return ok })
		switch {
		case target == "":
			out = append(out, Violation{name, tag, fmt.Sprintf("names %s, which the store does not have", ref.URL)})
		case !slices.Contains(tagsOf[target], ref.Version):
			out = append(out, Violation{name, tag, fmt.Sprintf("names %s at %s, which the store does not have", target, ref.Version)})
		}
	}
	return out
}

// Collector is a store that removes its old versions: publish.Layout,
// publish.Remote.
type Collector interface {
	publish.Lister
	GC(ctx context.Context, opts publish.GCOptions) (publish.GCResult, error)
}

// GC removes the old versions of solar's chart repositories in c, as Verify
// checks them (chain.IsChartRepository); the other repositories under the
// prefix are left as they are (GCResult.Skipped). It marks from every
// bootstrap chart version it keeps: the release chart versions one names stay
// (GCResult.Held), for a Target not rendered since (one skipped, say, because
// its credential failed) still installs them.
func GC(ctx context.Context, c Collector, opts publish.GCOptions) (publish.GCResult, error) {
	repos, err := c.Repositories(ctx, opts.Prefix)
	if err != nil {
		return publish.GCResult{}, err
	}
	if len(repos) == 0 {
		return publish.GCResult{}, ErrNoRepository
	}
	known := map[string]bool{}
	for _, name := range repos {
		known[name] = true
	}
	opts.Select = chain.IsChartRepository
	opts.Refs = func(ctx context.Context, repo publish.Repository, name, version string) ([]publish.Ref, error) {
		if !chain.IsBootstrapRepository(name) {
			return nil, nil
		}
		named, err := bootstrapRefs(ctx, repo, version)
		if err != nil {
			return nil, err
		}
		var refs []publish.Ref
		for _, n := range named {
			if target := repository(n.URL, func(name string) bool { return known[name] }); target != "" {
				refs = append(refs, publish.Ref{Repository: target, Version: n.Version})
			}
		}
		return refs, nil
	}
	return c.GC(ctx, opts)
}

// blobStorer is a registry's repository: its blobs answer HEAD.
type blobStorer interface {
	Blobs() registry.BlobStore
}

// verifyVersion checks a version's manifest (read, its digest and size
// compared) and its blobs: read and hashed in a layout or with deep, else
// their size compared with the registry's.
func (v *Verified) verifyVersion(ctx context.Context, repo publish.Repository, name, tag string, deep bool) {
	bad := func(msg string, args ...any) {
		v.Violations = append(v.Violations, Violation{name, tag, fmt.Sprintf(msg, args...)})
	}
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		bad("its manifest cannot be read: %v", err)
		return
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		bad("its manifest cannot be read: %v", err)
		return
	}
	v.Blobs, v.Bytes = v.Blobs+1, v.Bytes+int64(len(b))
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		bad("its manifest is damaged: %v", err)
		return
	}
	blobs, remote := repo.(blobStorer)
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		v.Blobs++
		if remote && !deep {
			got, err := blobs.Blobs().Resolve(ctx, d.Digest.String())
			switch {
			case errors.Is(err, errdef.ErrNotFound):
				bad("blob %s is missing", d.Digest)
			case err != nil:
				bad("blob %s cannot be read: %v", d.Digest, err)
			case got.Size != d.Size:
				bad("blob %s has %d bytes, its manifest says %d", d.Digest, got.Size, d.Size)
			}
			continue
		}
		n, err := readBlob(ctx, repo, d)
		v.Bytes += n
		switch {
		case errors.Is(err, errdef.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
			bad("blob %s is missing", d.Digest)
		case err != nil:
			bad("blob %s is damaged: %v", d.Digest, err)
		}
	}
}

// readBlob reads a blob to its end and checks its size and digest against
// its descriptor, returning the bytes read.
func readBlob(ctx context.Context, repo publish.Repository, d ocispec.Descriptor) (int64, error) {
	rc, err := repo.Fetch(ctx, d)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	vr := content.NewVerifyReader(rc, d)
	n, err := io.Copy(io.Discard, vr)
	if err != nil {
		return n, err
	}
	return n, vr.Verify()
}

// bootstrapRefs reads the release charts a bootstrap chart version names.
func bootstrapRefs(ctx context.Context, repo publish.Repository, tag string) ([]struct{ URL, Version string }, error) {
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return nil, err
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil || len(m.Layers) != 1 {
		return nil, fmt.Errorf("not a chart: %v", err)
	}
	layer, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		return nil, err
	}
	files, err := chartFiles([]publish.Blob{{Desc: m.Layers[0], Data: layer}})
	if err != nil {
		return nil, fmt.Errorf("its chart cannot be read: %w", err)
	}
	var values struct {
		Releases []struct{ URL, Version string } `json:"releases"`
	}
	if err := yaml.Unmarshal([]byte(files["values.yaml"]), &values); err != nil {
		return nil, fmt.Errorf("its values cannot be read: %w", err)
	}
	for _, r := range values.Releases {
		if _, err := semver.StrictNewVersion(r.Version); err != nil {
			return nil, fmt.Errorf("names %s at %q, not a version", r.URL, r.Version)
		}
	}
	return values.Releases, nil
}

// repository is the store's repository an oci:// URL names: the longest
// suffix of its path that the store has (the URL carries the registry and
// prefix the charts were rendered for).
func repository(url string, has func(name string) bool) string {
	parts := strings.Split(strings.TrimPrefix(url, "oci://"), "/")
	for i := 1; i < len(parts); i++ {
		if name := strings.Join(parts[i:], "/"); has(name) {
			return name
		}
	}
	return ""
}
