package verify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"

	"github.com/solar-pipeline/solar/internal/parallel"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
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

// plainVersion is the only kind of tag solar writes; referrersTag the tag a
// registry without the referrers API keeps a manifest's signatures under
// (the OCI 1.1 fallback), which oras writes for solar.
var (
	plainVersion = regexp.MustCompile(`^0\.0\.[1-9][0-9]*$`)
	referrersTag = regexp.MustCompile(`^sha256-[0-9a-f]{64}$`)
)

// Options say how deep Store reads.
type Options struct {
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
	// Verifier, when set, checks the signature of what a cluster can pull:
	// the newest version of every repository and the versions the newest
	// bootstrap versions name. An unsigned one, or one no key verifies, is
	// a violation.
	Verifier *sign.Verifier
}

// Result is what Store checked, and what it found broken.
type Result struct {
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
	// Signed counts the versions whose signatures were checked
	// (Options.Verifier).
	Signed int `json:"signed,omitempty"`
	// Indexes counts the namespace indexes checked against the
	// repositories (publish.Index).
	Indexes int `json:"indexes"`
	// names are, per bootstrap chart version, the release charts it names
	// (or why they cannot be read), checked once every repository's
	// versions are known.
	names []versionNames
}

// versionNames are the release charts a bootstrap chart version names.
type versionNames struct {
	repository, version string
	named               []published.Ref
	err                 error
}

// Store walks the chart repositories of the store under opts.Prefix and
// checks what solar promises: tags are plain 0.0.N versions; every version's
// manifest and blobs are there, with the digest and size their descriptors
// say; every bootstrap chart version names release chart versions the store
// holds.
func Store(ctx context.Context, st store.Store, opts Options) (*Result, error) {
	lister, ok := st.(store.Lister)
	if !ok {
		return nil, fmt.Errorf("the store cannot list its repositories")
	}
	listed, err := lister.Repositories(ctx, opts.Prefix)
	if err != nil {
		return nil, err
	}
	v := &Result{}
	var repos, indexes []string
	listed, indexes = store.SplitRepositories(listed, func(name string) bool { return !publish.IsIndexRepository(name) })
	repos, v.Skipped = store.SplitRepositories(listed, chain.IsChartRepository)
	if len(repos) == 0 && len(v.Skipped) > 0 {
		return nil, fmt.Errorf("%w (only %s, not solar's charts)", published.ErrNoRepository, strings.Join(v.Skipped, ", "))
	}
	if len(repos) == 0 {
		return nil, published.ErrNoRepository
	}
	v.Repositories = len(repos)
	// Each repository on its own (a registry answers requests at once):
	// their results are merged in the order of repos.
	parts := make([]Result, len(repos))
	tags := make([][]string, len(repos))
	var mu sync.Mutex
	done := 0
	err = parallel.Each(ctx, len(repos), opts.Concurrency, func(ctx context.Context, i int) error {
		var err error
		tags[i], err = parts[i].verifyRepository(ctx, st, repos[i], opts)
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
	has := func(name string) bool { _, ok := tagsOf[name]; return ok }
	for _, n := range v.names {
		v.Violations = append(v.Violations, n.check(has, tagsOf)...)
	}
	if err := v.verifyIndexes(ctx, st, indexes, tagsOf, opts); err != nil {
		return nil, err
	}
	if opts.Verifier != nil {
		if err := v.checkSignatures(ctx, st, pullable(tagsOf, v.names, has), opts); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// pullable are the versions a cluster can pull: the newest of every
// repository, and those the newest version of each bootstrap chart names.
func pullable(tagsOf map[string][]string, names []versionNames, has func(string) bool) [][2]string {
	newest := map[string]string{}
	for repo, tags := range tagsOf {
		if n := newestVersion(tags); n != "" {
			newest[repo] = n
		}
	}
	seen := map[[2]string]bool{}
	for repo, v := range newest {
		seen[[2]string{repo, v}] = true
	}
	for _, n := range names {
		if n.err != nil || newest[n.repository] != n.version {
			continue
		}
		for _, ref := range n.named {
			if target := published.Repository(ref.URL, has); target != "" && slices.Contains(tagsOf[target], ref.Version) {
				seen[[2]string{target, ref.Version}] = true
			}
		}
	}
	out := slices.Collect(maps.Keys(seen))
	slices.SortFunc(out, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	return out
}

// semverLess compares two plain versions 0.0.N.
func semverLess(a, b string) bool {
	return len(a) < len(b) || (len(a) == len(b) && a < b)
}

// checkSignatures checks the signature of each version of versions.
func (v *Result) checkSignatures(ctx context.Context, store store.Store, versions [][2]string, opts Options) error {
	found := make([]error, len(versions))
	err := parallel.Each(ctx, len(versions), opts.Concurrency, func(ctx context.Context, i int) error {
		repo, err := store.Repository(ctx, versions[i][0])
		if err != nil {
			return err
		}
		desc, err := repo.Resolve(ctx, versions[i][1])
		if err != nil {
			return nil // a violation already: its manifest cannot be read
		}
		found[i] = checkSignature(ctx, repo, sign.Subject{Repository: versions[i][0], Version: versions[i][1], Manifest: desc}, opts.Verifier)
		if found[i] != nil && !errors.Is(found[i], sign.ErrBadSignature) && !errors.Is(found[i], errNotSigned) {
			return fmt.Errorf("reading the signatures of %s:%s: %w", versions[i][0], versions[i][1], found[i])
		}
		return nil
	})
	if err != nil {
		return err
	}
	v.Signed = len(versions)
	for i, e := range found {
		if e != nil {
			v.Violations = append(v.Violations, Violation{versions[i][0], versions[i][1], e.Error()})
		}
	}
	return nil
}

// verifyRepository checks every version of one repository and returns its
// tags.
func (v *Result) verifyRepository(ctx context.Context, st store.Store, name string, opts Options) ([]string, error) {
	repo, err := st.Repository(ctx, name)
	if err != nil {
		return nil, err
	}
	tags, err := store.Tags(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("listing the versions of %s: %w", name, err)
	}
	for _, tag := range tags {
		if referrersTag.MatchString(tag) {
			continue // signatures, read with the version they sign
		}
		v.Versions++
		if !plainVersion.MatchString(tag) {
			v.Violations = append(v.Violations, Violation{name, tag, "not a version solar writes (0.0.N)"})
			continue
		}
		m := v.verifyVersion(ctx, repo, name, tag, opts)
		if m != nil && chain.IsBootstrapRepository(name) {
			refs, err := published.ManifestRefs(ctx, repo, *m)
			v.names = append(v.names, versionNames{name, tag, refs, err})
		}
	}
	return tags, nil
}

// add adds what another part of the walk checked and found.
func (v *Result) add(o Result) {
	v.Violations = append(v.Violations, o.Violations...)
	v.names = append(v.names, o.names...)
	v.Versions += o.Versions
	v.Blobs += o.Blobs
	v.Bytes += o.Bytes
}

// check says which release chart versions the bootstrap chart version names
// are not in the store (has, tagsOf).
func (n versionNames) check(has func(string) bool, tagsOf map[string][]string) []Violation {
	if n.err != nil {
		return []Violation{{n.repository, n.version, "what it names cannot be read: " + n.err.Error()}}
	}
	var out []Violation
	for _, ref := range n.named {
		target := published.Repository(ref.URL, has)
		switch {
		case target == "":
			out = append(out, Violation{n.repository, n.version, fmt.Sprintf("names %s, which the store does not have", ref.URL)})
		case !slices.Contains(tagsOf[target], ref.Version):
			out = append(out, Violation{n.repository, n.version, fmt.Sprintf("names %s at %s, which the store does not have", target, ref.Version)})
		}
	}
	return out
}

// blobStorer is a registry's repository: its blobs answer HEAD.
type blobStorer interface {
	Blobs() registry.BlobStore
}

// verifyVersion checks a version's manifest (read, its digest and size
// compared) and its blobs: read and hashed in a layout or with deep, else
// their size compared with the registry's. It returns the manifest, nil when
// it cannot be read.
func (v *Result) verifyVersion(ctx context.Context, repo store.Repository, name, tag string, opts Options) *ocispec.Manifest {
	bad := func(msg string, args ...any) {
		v.Violations = append(v.Violations, Violation{name, tag, fmt.Sprintf(msg, args...)})
	}
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		bad("its manifest cannot be read: %v", err)
		return nil
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		bad("its manifest cannot be read: %v", err)
		return nil
	}
	v.Blobs, v.Bytes = v.Blobs+1, v.Bytes+int64(len(b))
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		bad("its manifest is damaged: %v", err)
		return nil
	}
	deep := opts.Deep
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
	return &m
}

// checkSignature checks the signature of s, in repo.
func checkSignature(ctx context.Context, repo store.Repository, s sign.Subject, v *sign.Verifier) error {
	t, ok := repo.(sign.Target)
	if !ok {
		return errors.New("the store keeps no signatures")
	}
	err := v.Check(ctx, t, s)
	if errors.Is(err, sign.ErrUnsigned) {
		return errNotSigned
	}
	return err
}

// readBlob reads a blob to its end and checks its size and digest against
// its descriptor, returning the bytes read.
func readBlob(ctx context.Context, repo store.Repository, d ocispec.Descriptor) (int64, error) {
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
