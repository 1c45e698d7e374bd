package archive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// Timeouts of reading dependencies from their registries.
const (
	// RequestTimeout bounds a request that reads no blob: resolving a
	// tag, a manifest, the referrers.
	RequestTimeout = 30 * time.Second
	// BlobTimeout bounds reading one blob.
	BlobTimeout = 15 * time.Minute
)

// Request is one artifact export carries: its kind (KindChart, KindImage)
// and its reference as solar artifacts lists it.
type Request struct {
	Kind, Reference string
}

// SourceOptions say how dependencies are read from their registries:
// anonymously, or with the credentials of the Docker config
// ($DOCKER_CONFIG, ~/.docker/config.json); over TLS with the system's
// trust.
type SourceOptions struct {
	// PlainHTTP are hosts (HOST[:PORT]) to read over plain HTTP.
	PlainHTTP []string
	// Wrap, when set, wraps the HTTP transport (--debug logs requests).
	Wrap func(http.RoundTripper) http.RoundTripper
	// Limits bound what is read: what push would refuse is not exported.
	Limits Limits
	// Have, when set, says which manifests the other side holds: a
	// dependency whose tag resolves to one is not read further, and is
	// listed in Fetched.LeftOut (Options.Have).
	Have func(digest.Digest) bool
}

// Fetched is the dependencies read, their blobs (manifests included) in
// files of a private temporary folder, each once: a content.Fetcher that
// Export copies them from. Close removes the folder.
type Fetched struct {
	Dependencies []Dependency
	// LeftOut are the references of the dependencies SourceOptions.Have
	// said the other side holds: not read, not carried.
	LeftOut []string
	index   []ocispec.Descriptor
	blobs   map[digest.Digest]ocispec.Descriptor
	tmp     *tempDir
	total   int64
}

// Close removes what was read.
func (f *Fetched) Close() error {
	if f == nil || f.tmp == nil {
		return nil
	}
	return f.tmp.remove()
}

// Fetch opens a blob read.
func (f *Fetched) Fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	if _, ok := f.blobs[d.Digest]; !ok {
		return nil, fmt.Errorf("%s: %w", d.Digest, errdef.ErrNotFound)
	}
	return os.Open(filepath.Join(f.tmp.dir, d.Digest.Encoded()))
}

// FetchDependencies reads each request's artifact whole from its registry:
// its tag resolved once to a digest, every manifest (an index's platform
// manifests too) and blob, each checked against its digest, and the
// signatures the source has for it. The requests are read each once (by
// their full reference); what cannot be read is named, all at once.
func FetchDependencies(ctx context.Context, reqs []Request, opts SourceOptions) (*Fetched, error) {
	tmp, err := newTempDir()
	if err != nil {
		return nil, err
	}
	f := &Fetched{blobs: map[digest.Digest]ocispec.Descriptor{}, tmp: tmp}
	client, err := sourceClient(opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	open := func(repoName string) (sourceTarget, error) {
		host, _, _ := strings.Cut(repoName, "/")
		if host == "docker.io" {
			repoName = "registry-1.docker.io" + strings.TrimPrefix(repoName, "docker.io")
		}
		repo, err := remote.NewRepository(repoName)
		if err != nil {
			return nil, err
		}
		repo.Client, repo.PlainHTTP = client, slices.Contains(opts.PlainHTTP, host)
		return repo, nil
	}
	if err := f.read(ctx, reqs, open, cmp.Or(opts.Limits, DefaultLimits), opts.Have); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sourceTarget is a repository dependencies are read from: a registry's
// (or, in tests, a memory store).
type sourceTarget interface {
	content.ReadOnlyGraphStorage
	content.Resolver
}

// read reads reqs, each repository opened by open (HOST/PATH).
func (f *Fetched) read(ctx context.Context, reqs []Request, open func(string) (sourceTarget, error), lim Limits, have func(digest.Digest) bool) error {
	seen := map[string]bool{}
	var problems []string
	for _, r := range reqs {
		full, err := FullReference(r.Reference)
		if err == nil && r.Kind != KindChart && r.Kind != KindImage {
			err = fmt.Errorf("kind %q: not %s or %s", r.Kind, KindChart, KindImage)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", r.Reference, err))
			continue
		}
		if seen[full] {
			continue
		}
		seen[full] = true
		s := &sourceRead{f: f, lim: lim, have: have}
		d, err := s.dependency(ctx, r.Kind, full, open)
		if errors.Is(err, errHeld) {
			f.LeftOut = append(f.LeftOut, full)
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: %v", r.Kind, full, err))
			continue
		}
		f.Dependencies = append(f.Dependencies, d)
	}
	if len(problems) > 0 {
		return fmt.Errorf("reading the dependencies:\n  %s", strings.Join(problems, "\n  "))
	}
	// Charts, then images, each by reference: as solar artifacts lists them.
	slices.SortFunc(f.Dependencies, func(a, b Dependency) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Reference, b.Reference))
	})
	return nil
}

// sourceClient is the HTTP client dependencies are read with: timeouts on
// every connection and response, credentials from the Docker config.
func sourceClient(opts SourceOptions) (*auth.Client, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.DialContext = (&net.Dialer{Timeout: RequestTimeout, KeepAlive: 30 * time.Second}).DialContext
	base.TLSHandshakeTimeout = RequestTimeout
	base.ResponseHeaderTimeout = RequestTimeout
	var transport http.RoundTripper = base
	if opts.Wrap != nil {
		transport = opts.Wrap(base)
	}
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the Docker config for the sources' credentials: %w", err)
	}
	return &auth.Client{Client: &http.Client{Transport: transport}, Cache: auth.NewCache(),
		Credential: credentials.Credential(store)}, nil
}

// sourceRead reads one dependency.
type sourceRead struct {
	f    *Fetched
	lim  Limits
	repo sourceTarget
	have func(digest.Digest) bool
}

// errHeld is a dependency the other side holds (SourceOptions.Have).
var errHeld = errors.New("held by the other side")

func (s *sourceRead) dependency(ctx context.Context, kind, full string, open func(string) (sourceTarget, error)) (Dependency, error) {
	repoName, tag, pinned := splitReference(full)
	repo, err := open(repoName)
	if err != nil {
		return Dependency{}, err
	}
	s.repo = repo
	want := cmp.Or(string(pinned), tag)
	rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	desc, err := s.repo.Resolve(rctx, want)
	cancel()
	if err != nil {
		return Dependency{}, fmt.Errorf("resolving %s: %w", want, err)
	}
	if pinned != "" && desc.Digest != pinned {
		return Dependency{}, fmt.Errorf("the registry answers %s for the digest %s", desc.Digest, pinned)
	}
	if s.have != nil && s.have(desc.Digest) {
		return Dependency{}, errHeld
	}
	top := ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}
	if err := s.graph(ctx, top, 0); err != nil {
		return Dependency{}, err
	}
	d := Dependency{Kind: kind, Reference: full, Digest: top.Digest, MediaType: top.MediaType, Signatures: []digest.Digest{}}
	top.Annotations = map[string]string{ocispec.AnnotationRefName: full, AnnotationDependencyKind: kind}
	s.f.index = append(s.f.index, top)
	sigs, err := s.signatures(ctx, desc)
	if err != nil {
		return Dependency{}, fmt.Errorf("reading its signatures: %w", err)
	}
	for _, sd := range sigs {
		if err := s.graph(ctx, sd, maxDepth); err != nil {
			return Dependency{}, fmt.Errorf("its signature %s: %w", sd.Digest, err)
		}
		sd.Annotations = map[string]string{AnnotationSignatureOf: full}
		s.f.index = append(s.f.index, sd)
		d.Signatures = append(d.Signatures, sd.Digest)
	}
	slices.Sort(d.Signatures)
	return d, nil
}

// signatures are the manifests that sign desc: its cosign signature (the
// tag sha256-<hex>.sig) and its referrers (the registry's referrers API,
// or else the tag sha256-<hex>); none found is none.
func (s *sourceRead) signatures(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	var out []ocispec.Descriptor
	sig, err := s.repo.Resolve(ctx, CosignTag(desc.Digest))
	switch {
	case err == nil:
		out = append(out, ocispec.Descriptor{MediaType: sig.MediaType, Digest: sig.Digest, Size: sig.Size})
	case !errors.Is(err, errdef.ErrNotFound):
		return nil, err
	}
	refs, err := registry.Referrers(ctx, s.repo, desc, "")
	if err != nil && !errors.Is(err, errdef.ErrNotFound) {
		return nil, err
	}
	for _, r := range refs {
		if !slices.ContainsFunc(out, func(o ocispec.Descriptor) bool { return o.Digest == r.Digest }) {
			out = append(out, ocispec.Descriptor{MediaType: r.MediaType, ArtifactType: r.ArtifactType, Digest: r.Digest, Size: r.Size})
		}
	}
	return out, nil
}

// CosignTag is the tag cosign gives the signature of the manifest d.
func CosignTag(d digest.Digest) string {
	return d.Algorithm().String() + "-" + d.Encoded() + ".sig"
}

// graph reads the manifest (or index) d and all it names; depth is how
// deep d is in indexes (maxDepth: a signature, an image manifest only).
func (s *sourceRead) graph(ctx context.Context, d ocispec.Descriptor, depth int) error {
	if _, ok := s.f.blobs[d.Digest]; ok {
		return nil
	}
	if d.Size > maxManifest {
		return fmt.Errorf("manifest %s is %d bytes: more than %d", d.Digest, d.Size, maxManifest)
	}
	if depth >= maxDepth && !isManifest(d.MediaType) {
		return fmt.Errorf("manifest %s is a %q: an image manifest was expected", d.Digest, d.MediaType)
	}
	rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	b, err := content.FetchAll(rctx, s.repo, d)
	cancel()
	if err != nil {
		return fmt.Errorf("reading manifest %s: %w", d.Digest, err)
	}
	m, err := decodeAny(d, b)
	if err != nil {
		return err
	}
	for _, c := range m.children(d.MediaType) {
		c = ocispec.Descriptor{MediaType: c.MediaType, Digest: c.Digest, Size: c.Size}
		if c.Digest.Validate() != nil || c.Digest.Algorithm() != digest.SHA256 {
			return fmt.Errorf("manifest %s names %q: not a sha256 digest", d.Digest, c.Digest)
		}
		if isIndex(d.MediaType) {
			err = s.graph(ctx, c, depth+1)
		} else {
			err = s.blob(ctx, c)
		}
		if err != nil {
			return err
		}
	}
	return s.save(d, b)
}

// save writes a manifest read (and checked) into the folder.
func (s *sourceRead) save(d ocispec.Descriptor, b []byte) error {
	if err := s.count(d); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.f.tmp.dir, d.Digest.Encoded()), b, 0o600); err != nil {
		return err
	}
	s.f.blobs[d.Digest] = d
	return nil
}

func (s *sourceRead) count(d ocispec.Descriptor) error {
	if d.Size > s.lim.Blob {
		return fmt.Errorf("blob %s is %d bytes, more than the limit of %d push reads", d.Digest, d.Size, s.lim.Blob)
	}
	if s.f.total += d.Size; s.f.total > s.lim.Total {
		return fmt.Errorf("the dependencies are more than the limit of %d bytes push reads", s.lim.Total)
	}
	return nil
}

// blob streams one blob to a file of the folder, checked against its
// digest.
func (s *sourceRead) blob(ctx context.Context, d ocispec.Descriptor) error {
	if have, ok := s.f.blobs[d.Digest]; ok {
		if have.Size != d.Size {
			return fmt.Errorf("blob %s is named with two sizes, %d and %d", d.Digest, have.Size, d.Size)
		}
		return nil
	}
	if err := s.count(d); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, BlobTimeout)
	defer cancel()
	rc, err := s.repo.Fetch(ctx, d)
	if err != nil {
		return fmt.Errorf("reading blob %s: %w", d.Digest, err)
	}
	defer rc.Close()
	name := filepath.Join(s.f.tmp.dir, d.Digest.Encoded())
	out, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	vr := content.NewVerifyReader(rc, d)
	_, err = io.Copy(out, vr)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = vr.Verify()
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("reading blob %s: %w", d.Digest, err)
	}
	s.f.blobs[d.Digest] = d
	return nil
}
