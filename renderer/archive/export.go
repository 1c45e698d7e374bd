package archive

import (
	"archive/tar"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// source is where a blob of the archive is read from.
type source struct {
	repo content.Fetcher
	desc ocispec.Descriptor
}

// Options say what an export carries besides the layout's newest
// versions, and what it leaves out.
type Options struct {
	// Deps are the dependencies read (FetchDependencies); nil: none.
	Deps *Fetched
	// Have, when set, says which manifests the other side holds (what a
	// site confirmed, sitereport.Confirmed.HasDigest): a version whose
	// manifest it holds is left out, with its signatures (FetchDependencies
	// leaves out such a dependency by SourceOptions.Have).
	Have func(digest.Digest) bool
}

// plan is what an archive of a layout holds.
type plan struct {
	leftOut  []string
	versions []Version
	deps     []Dependency
	index    []ocispec.Descriptor
	blobs    map[digest.Digest]source
}

// Export writes the newest version of every repository of l, with its
// signatures, to w as one OCI image-layout archive (see the package's
// doc). Every blob is checked against its digest as it is read.
func Export(ctx context.Context, l *store.Layout, w io.Writer) (*Summary, error) {
	return ExportWith(ctx, l, Options{}, w)
}

// ExportWith is Export with opts: the archive also carrying the
// dependencies read (with any, solar-export.json is of
// FormatDependencies), and leaving out what the other side holds.
func ExportWith(ctx context.Context, l *store.Layout, opts Options, w io.Writer) (*Summary, error) {
	p, err := collect(ctx, l, opts)
	if err != nil {
		return nil, err
	}
	if opts.Have != nil && len(p.versions) == 0 && len(p.deps) == 0 {
		return nil, fmt.Errorf("%w (%d left out)", ErrNothingNew, len(p.leftOut))
	}
	format := Format
	if len(p.deps) > 0 {
		format = FormatDependencies
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: p.index,
	})
	if err != nil {
		return nil, err
	}
	export, err := json.MarshalIndent(Manifest{Format: format, Versions: p.versions, Dependencies: p.deps}, "", "  ")
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(w)
	for _, f := range []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{ocispec.ImageIndexFile, index},
		{ExportFile, append(export, '\n')},
	} {
		if err := tw.WriteHeader(header(f.name, tar.TypeReg, int64(len(f.data)))); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(header(d, tar.TypeDir, 0)); err != nil {
			return nil, err
		}
	}
	for _, d := range slices.Sorted(maps.Keys(p.blobs)) {
		if err := writeBlob(ctx, tw, p.blobs[d]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &Summary{Versions: p.versions, Dependencies: p.deps, Blobs: len(p.blobs), LeftOut: p.leftOut}, nil
}

// header is the tar header of an entry: the same for the same name and size.
func header(name string, typ byte, size int64) *tar.Header {
	mode := int64(fileMode)
	if typ == tar.TypeDir {
		mode = dirMode
	}
	return &tar.Header{Typeflag: typ, Name: name, Size: size, Mode: mode,
		ModTime: publish.Epoch, Format: tar.FormatUSTAR}
}

// writeBlob copies one blob of the layout into the archive, checked.
func writeBlob(ctx context.Context, tw *tar.Writer, s source) error {
	rc, err := s.repo.Fetch(ctx, s.desc)
	if err != nil {
		return fmt.Errorf("reading blob %s: %w", s.desc.Digest, err)
	}
	defer rc.Close()
	if err := tw.WriteHeader(header("blobs/sha256/"+s.desc.Digest.Encoded(), tar.TypeReg, s.desc.Size)); err != nil {
		return err
	}
	vr := content.NewVerifyReader(rc, s.desc)
	if _, err := io.Copy(tw, vr); err != nil {
		return fmt.Errorf("blob %s of the layout: %w", s.desc.Digest, err)
	}
	if err := vr.Verify(); err != nil {
		return fmt.Errorf("blob %s of the layout is damaged: %w", s.desc.Digest, err)
	}
	return nil
}

// collect lists the versions, index entries and blobs of l's archive, and
// of the dependencies deps read.
func collect(ctx context.Context, l *store.Layout, opts Options) (*plan, error) {
	repos, err := l.Repositories(ctx, "")
	if err != nil {
		return nil, err
	}
	p := &plan{blobs: map[digest.Digest]source{}}
	for _, name := range repos {
		if publish.IsIndexRepository(name) {
			continue // it describes this layout, not where the archive goes
		}
		repo, err := l.Repository(ctx, name)
		if err != nil {
			return nil, err
		}
		version, err := publish.Newest(ctx, repo)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if version == "" {
			continue
		}
		if opts.Have != nil {
			desc, err := repo.Resolve(ctx, version)
			if err != nil {
				return nil, fmt.Errorf("%s:%s: %w", name, version, err)
			}
			if opts.Have(desc.Digest) {
				p.leftOut = append(p.leftOut, name+":"+version)
				continue
			}
		}
		v, err := p.addVersion(ctx, repo, name, version)
		if err != nil {
			return nil, fmt.Errorf("%s:%s: %w", name, version, err)
		}
		p.versions = append(p.versions, v)
	}
	if opts.Deps != nil {
		p.leftOut = append(p.leftOut, opts.Deps.LeftOut...)
	}
	if err := p.addDependencies(opts.Deps); err != nil {
		return nil, err
	}
	slices.SortFunc(p.index, func(a, b ocispec.Descriptor) int {
		return cmp.Or(cmp.Compare(a.Annotations[ocispec.AnnotationRefName], b.Annotations[ocispec.AnnotationRefName]),
			cmp.Compare(a.Digest, b.Digest))
	})
	return p, nil
}

// addVersion adds one version, its blobs and its signatures.
func (p *plan) addVersion(ctx context.Context, repo store.Repository, name, version string) (Version, error) {
	desc, err := repo.Resolve(ctx, version)
	if err != nil {
		return Version{}, err
	}
	desc = ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size,
		Annotations: map[string]string{ocispec.AnnotationRefName: name + ":" + version}}
	if err := p.addManifest(ctx, repo, desc); err != nil {
		return Version{}, err
	}
	p.index = append(p.index, desc)
	v := Version{Repository: name, Version: version, Manifest: desc.Digest, Signatures: []digest.Digest{}}
	g, ok := repo.(content.ReadOnlyGraphStorage)
	if !ok {
		return v, nil
	}
	refs, err := registry.Referrers(ctx, g, desc, api.MediaTypeSigstoreBundle)
	if err != nil {
		return Version{}, fmt.Errorf("reading its signatures: %w", err)
	}
	for _, r := range refs {
		r = ocispec.Descriptor{MediaType: r.MediaType, ArtifactType: api.MediaTypeSigstoreBundle, Digest: r.Digest, Size: r.Size}
		if err := p.addManifest(ctx, repo, r); err != nil {
			return Version{}, fmt.Errorf("its signature: %w", err)
		}
		p.index = append(p.index, r)
		v.Signatures = append(v.Signatures, r.Digest)
	}
	slices.Sort(v.Signatures)
	v.Signatures = slices.Compact(v.Signatures)
	return v, nil
}

// addManifest adds a manifest and the blobs it names.
func (p *plan) addManifest(ctx context.Context, repo store.Repository, desc ocispec.Descriptor) error {
	m, err := readManifest(ctx, repo, desc)
	if err != nil {
		return err
	}
	for _, d := range append([]ocispec.Descriptor{desc, m.Config}, m.Layers...) {
		if err := p.addBlob(repo, d); err != nil {
			return err
		}
	}
	return nil
}

func (p *plan) addBlob(repo content.Fetcher, d ocispec.Descriptor) error {
	if d.Digest.Algorithm() != digest.SHA256 || d.Digest.Validate() != nil {
		return fmt.Errorf("blob %q: not a sha256 digest", d.Digest)
	}
	if have, ok := p.blobs[d.Digest]; ok {
		if have.desc.Size != d.Size {
			return fmt.Errorf("blob %s is named with two sizes, %d and %d", d.Digest, have.desc.Size, d.Size)
		}
		return nil
	}
	p.blobs[d.Digest] = source{repo: repo, desc: ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}}
	return nil
}

// readManifest reads an image manifest of a store, bounded and checked.
func readManifest(ctx context.Context, f content.Fetcher, d ocispec.Descriptor) (*ocispec.Manifest, error) {
	if d.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("manifest %s is a %q, not an OCI image manifest", d.Digest, d.MediaType)
	}
	if d.Size > maxManifest {
		return nil, fmt.Errorf("manifest %s is %d bytes: too large", d.Digest, d.Size)
	}
	b, err := content.FetchAll(ctx, f, d)
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", d.Digest, err)
	}
	return decodeManifest(d, b)
}

func decodeManifest(d ocispec.Descriptor, b []byte) (*ocispec.Manifest, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", d.Digest, err)
	}
	if m.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("manifest %s is a %q, not an OCI image manifest", d.Digest, m.MediaType)
	}
	return &m, nil
}

// addDependencies adds the dependencies read, their signatures and blobs.
func (p *plan) addDependencies(deps *Fetched) error {
	if deps == nil {
		return nil
	}
	p.deps = deps.Dependencies
	p.index = append(p.index, deps.index...)
	for _, d := range slices.Sorted(maps.Keys(deps.blobs)) {
		if err := p.addBlob(deps, deps.blobs[d]); err != nil {
			return err
		}
	}
	return nil
}
