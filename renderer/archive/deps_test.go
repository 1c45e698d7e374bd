package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Where the test's dependencies come from, and their references.
const (
	depImage = "src.example/team/app:1.0"
	depChart = "src.example/charts/podinfo:6.7.0"
)

// memRegistry is a registry of memory stores, one per repository (HOST/PATH).
type memRegistry map[string]*memory.Store

func (r memRegistry) repo(name string) *memory.Store {
	if r[name] == nil {
		r[name] = memory.New()
	}
	return r[name]
}

func (r memRegistry) source(name string) (sourceTarget, error) { return r.repo(name), nil }

func (r memRegistry) site(_ context.Context, name string) (oras.Target, error) {
	return r.repo(name), nil
}

// push stores b of mediaType in repo.
func push(t *testing.T, repo *memory.Store, mediaType string, b []byte) ocispec.Descriptor {
	t.Helper()
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if ok, _ := repo.Exists(context.Background(), d); !ok {
		require.NoError(t, repo.Push(context.Background(), d, bytes.NewReader(b)))
	}
	return d
}

// pushImage stores a ggcr image's layers, config and manifest.
func pushImage(t *testing.T, repo *memory.Store, img v1.Image) ocispec.Descriptor {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	for _, l := range layers {
		mt, err := l.MediaType()
		require.NoError(t, err)
		rc, err := l.Compressed()
		require.NoError(t, err)
		var buf bytes.Buffer
		_, err = buf.ReadFrom(rc)
		require.NoError(t, err)
		push(t, repo, string(mt), buf.Bytes())
	}
	cfg, err := img.RawConfigFile()
	require.NoError(t, err)
	m, err := img.Manifest()
	require.NoError(t, err)
	push(t, repo, string(m.Config.MediaType), cfg)
	raw, err := img.RawManifest()
	require.NoError(t, err)
	mt, err := img.MediaType()
	require.NoError(t, err)
	return push(t, repo, string(mt), raw)
}

// artifact is a small OCI manifest of one layer text (a chart, a
// signature), with subject when not nil.
func artifact(t *testing.T, repo *memory.Store, artifactType, text string, subject *ocispec.Descriptor) ocispec.Descriptor {
	t.Helper()
	cfg := push(t, repo, ocispec.DescriptorEmptyJSON.MediaType, ocispec.DescriptorEmptyJSON.Data)
	layer := push(t, repo, "application/octet-stream", []byte(text))
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType, Config: cfg, Layers: []ocispec.Descriptor{layer}, Subject: subject}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	d := push(t, repo, ocispec.MediaTypeImageManifest, raw)
	d.ArtifactType = artifactType
	return d
}

// testSource is a source registry holding an image index of two platform
// images (Docker's manifests, as most images are), signed with cosign's tag
// and a referrer, and an unsigned chart.
func testSource(t *testing.T) (memRegistry, ocispec.Descriptor) {
	t.Helper()
	ctx := context.Background()
	reg := memRegistry{}
	repo, _, _ := splitReference(depImage)
	r := reg.repo(repo)
	idx, err := random.Index(64, 2, 2, random.WithSource(rand.NewSource(1)))
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		require.NoError(t, err)
		pushImage(t, r, img)
	}
	raw, err := idx.RawManifest()
	require.NoError(t, err)
	top := push(t, r, ocispec.MediaTypeImageIndex, raw)
	require.NoError(t, r.Tag(ctx, top, "1.0"))
	cosign := artifact(t, r, "", "cosign signature", nil)
	require.NoError(t, r.Tag(ctx, cosign, CosignTag(top.Digest)))
	artifact(t, r, api.MediaTypeSigstoreBundle, "a bundle", &top)

	crepo, _, _ := splitReference(depChart)
	c := reg.repo(crepo)
	chart := artifact(t, c, "", "a chart", nil)
	require.NoError(t, c.Tag(ctx, chart, "6.7.0"))
	return reg, top
}

// depsArchive exports a signed layout with the test source's image and
// chart.
// (of the layout dir; "": a new one).
func depsArchive(t *testing.T, dir string) (string, *Summary, memRegistry) {
	t.Helper()
	ctx := context.Background()
	src, _ := testSource(t)
	if dir == "" {
		k, _ := signingKey(t)
		dir = signedLayout(t, k, false)
	}
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true, MustExist: true})
	require.NoError(t, err)
	defer l.Close()
	tmp, err := newTempDir()
	require.NoError(t, err)
	f := &Fetched{blobs: map[digest.Digest]ocispec.Descriptor{}, tmp: tmp}
	defer f.Close()
	reqs := []Request{{KindImage, depImage}, {KindChart, depChart}, {KindImage, "src.example/team/app:1.0"}}
	require.NoError(t, f.read(ctx, reqs, src.source, DefaultLimits, nil))
	out := filepath.Join(t.TempDir(), "bundle.tar")
	s, err := WriteFileWith(ctx, l, Options{Deps: f}, out)
	require.NoError(t, err)
	return out, s, src
}

// TestExportDependencies: an archive with dependencies lists each once at
// its digest, with its signatures, in a standard layout (index.json
// annotated), the same bytes for the same layout and sources; it unpacks
// whole.
func TestExportDependencies(t *testing.T) {
	ctx := context.Background()
	k, _ := signingKey(t)
	dir := signedLayout(t, k, false)
	file, s, src := depsArchive(t, dir)
	require.Len(t, s.Dependencies, 2, "each once")
	chart, image := s.Dependencies[0], s.Dependencies[1]
	assert.Equal(t, Dependency{Kind: KindChart, Reference: depChart, Digest: chart.Digest, MediaType: ocispec.MediaTypeImageManifest,
		Signatures: []digest.Digest{}}, chart)
	srcRepo, _, _ := splitReference(depImage)
	top, err := src.repo(srcRepo).Resolve(ctx, "1.0")
	require.NoError(t, err)
	assert.Equal(t, top.Digest, image.Digest)
	assert.Equal(t, ocispec.MediaTypeImageIndex, image.MediaType)
	assert.Len(t, image.Signatures, 2, "cosign's and the referrer")

	b, err := os.ReadFile(file)
	require.NoError(t, err)
	entries := readEntries(t, b)
	var m Manifest
	require.NoError(t, json.Unmarshal(entry(t, entries, ExportFile), &m))
	assert.Equal(t, FormatDependencies, m.Format)
	var index ocispec.Index
	require.NoError(t, json.Unmarshal(entry(t, entries, "index.json"), &index))
	found := 0
	for _, d := range index.Manifests {
		if d.Digest == image.Digest {
			found++
			assert.Equal(t, map[string]string{ocispec.AnnotationRefName: depImage, AnnotationDependencyKind: KindImage}, d.Annotations)
		}
		if d.Annotations[AnnotationSignatureOf] == depImage {
			found++
		}
	}
	assert.Equal(t, 3, found)
	file2, _, _ := depsArchive(t, dir)
	b2, err := os.ReadFile(file2)
	require.NoError(t, err)
	assert.Equal(t, b, b2, "the same layout and sources give the same bytes")

	u, err := Unpack(ctx, file, DefaultLimits)
	require.NoError(t, err)
	defer u.Close()
	assert.Equal(t, s.Dependencies, u.Dependencies)
}

// TestRelocateDependencies: relocated into a site, every platform manifest
// of the image index, its tag and both signatures are there at the
// source's digests, and a second push changes nothing; a relocated tag at
// another digest refuses the push.
func TestRelocateDependencies(t *testing.T) {
	ctx := context.Background()
	file, s, _ := depsArchive(t, "")
	image := s.Dependencies[1]
	u, err := Unpack(ctx, file, DefaultLimits)
	require.NoError(t, err)
	defer u.Close()
	site := memRegistry{}
	plan, err := u.PlanDependencies(ctx, "site.example/mirror", site.site)
	require.NoError(t, err)
	got, err := plan.Push(ctx, nil)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "site.example/mirror/src.example/team/app:1.0", got[1].Site)
	assert.Equal(t, ActionCreate, got[1].Action)
	at := site.repo("mirror/src.example/team/app")
	d, err := at.Resolve(ctx, "1.0")
	require.NoError(t, err)
	assert.Equal(t, image.Digest, d.Digest, "digests hold")
	idx, err := random.Index(64, 2, 2, random.WithSource(rand.NewSource(1)))
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	for _, pm := range im.Manifests {
		ok, err := at.Exists(ctx, ocispec.Descriptor{MediaType: string(pm.MediaType), Digest: digest.Digest(pm.Digest.String()), Size: pm.Size})
		require.NoError(t, err)
		assert.True(t, ok, "platform manifest %s", pm.Digest)
	}
	sig, err := at.Resolve(ctx, CosignTag(image.Digest))
	require.NoError(t, err)
	assert.Contains(t, image.Signatures, sig.Digest)
	refs, err := at.Predecessors(ctx, d)
	require.NoError(t, err)
	assert.Len(t, refs, 1, "the referrer, with its subject")

	plan, err = u.PlanDependencies(ctx, "site.example/mirror", site.site)
	require.NoError(t, err)
	for _, r := range plan.Results() {
		assert.Equal(t, ActionUnchanged, r.Action, r.Reference)
	}

	// The site's podinfo:6.7.0 is another chart: nothing is pushed.
	other := memRegistry{}
	moved := artifact(t, other.repo("mirror/src.example/charts/podinfo"), "", "another chart", nil)
	require.NoError(t, other.repo("mirror/src.example/charts/podinfo").Tag(ctx, moved, "6.7.0"))
	_, err = u.PlanDependencies(ctx, "site.example/mirror", other.site)
	require.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "site.example/mirror/src.example/charts/podinfo:6.7.0 is "+moved.Digest.String())
	_, err = other.repo("mirror/src.example/team/app").Resolve(ctx, "1.0")
	assert.Error(t, err, "nothing pushed")
}

// TestFullReference: references are recorded spelled out.
func TestFullReference(t *testing.T) {
	for in, want := range map[string]string{
		"nginx":                              "docker.io/library/nginx:latest",
		"nginx:1.27":                         "docker.io/library/nginx:1.27",
		"ghcr.io/a/b:1@sha256:" + hex64:      "ghcr.io/a/b:1@sha256:" + hex64,
		"127.0.0.1:5000/a/b@sha256:" + hex64: "127.0.0.1:5000/a/b@sha256:" + hex64,
		depChart:                             depChart,
	} {
		got, err := FullReference(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := FullReference("Not A Reference")
	assert.Error(t, err)
	assert.True(t, strings.HasPrefix(CosignTag(digest.FromString("x")), "sha256-"))
}

var hex64 = strings.Repeat("ab", 32)

// TestFetchNamesEveryProblem: what cannot be read is named, each with why,
// all at once; a blob over the limits push reads is not read.
func TestFetchNamesEveryProblem(t *testing.T) {
	src, _ := testSource(t)
	tmp, err := newTempDir()
	require.NoError(t, err)
	f := &Fetched{blobs: map[digest.Digest]ocispec.Descriptor{}, tmp: tmp}
	defer f.Close()
	err = f.read(context.Background(), []Request{
		{KindImage, "src.example/team/app:2.0"},
		{KindChart, depChart},
		{KindImage, "Not A Reference"},
		{"sbom", "src.example/team/app:1.0"},
	}, src.source, DefaultLimits, nil)
	require.Error(t, err)
	for _, want := range []string{
		"image src.example/team/app:2.0: resolving 2.0: ",
		`Not A Reference: "Not A Reference" is not a reference`,
		`src.example/team/app:1.0: kind "sbom": not chart or image`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), depChart, "what was read is no problem")

	// A blob over the limit push reads is not exported.
	lim := DefaultLimits
	lim.Blob = 100
	err = f.read(context.Background(), []Request{{KindImage, depImage}}, src.source, lim, nil)
	assert.ErrorContains(t, err, "more than the limit of 100 push reads")
}
