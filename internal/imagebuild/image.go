package imagebuild

import (
	"context"
	"fmt"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/renderer/publish"
)

// Options say what to build. Zero values are noted.
type Options struct {
	Dir     string // the directory the go command runs in (zero: the current one)
	Package string // the main package, e.g. "./cmd/solar-agent"
	Name    string // the binary's name: /usr/local/bin/Name is the entrypoint
	// Platforms to build (zero: linux/amd64 and linux/arm64, in that order).
	Platforms []v1.Platform
	Version   string    // the image's version, also linked into the binary
	Revision  string    // the VCS commit of the source
	Source    string    // the source repository's URL
	Created   time.Time // the images' creation time (zero: publish.Epoch)
	BinDir    string    // where binaries are written (zero: a temporary directory, removed)
	Go        string    // the go command (zero: "go")
}

func (o Options) goCommand() string {
	if o.Go == "" {
		return "go"
	}
	return o.Go
}

// DefaultPlatforms are the platforms built when Options.Platforms is empty.
var DefaultPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Result is a built index and, per platform, its image and the binary's SBOM.
type Result struct {
	Index  v1.ImageIndex
	Images []Image
}

// Image is the image of one platform.
type Image struct {
	Platform v1.Platform
	Image    v1.Image
	SBOM     []byte // CycloneDX JSON of the binary's Go modules
}

// Build compiles the main package for each platform and returns the images
// in one OCI image index. The layers are held in memory; BinDir, if set,
// keeps the binaries.
func Build(ctx context.Context, o Options) (*Result, error) {
	if o.Package == "" || o.Name == "" {
		return nil, fmt.Errorf("building an image: a package and a binary name are required")
	}
	if len(o.Platforms) == 0 {
		o.Platforms = DefaultPlatforms
	}
	if o.Created.IsZero() {
		o.Created = publish.Epoch
	}
	dir := o.BinDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "solar-imagebuild-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	base, err := baseLayer()
	if err != nil {
		return nil, fmt.Errorf("building the base layer: %w", err)
	}
	res := &Result{}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		bin, err := goBuild(ctx, o, p, dir)
		if err != nil {
			return nil, err
		}
		img, err := platformImage(o, p, base, bin)
		if err != nil {
			return nil, fmt.Errorf("building the image of %s for %s: %w", o.Name, platformString(p), err)
		}
		sbom, err := SBOM(bin)
		if err != nil {
			return nil, err
		}
		res.Images = append(res.Images, Image{Platform: p, Image: img, SBOM: sbom})
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &p}})
	}
	res.Index = mutate.Annotations(idx, o.annotations()).(v1.ImageIndex)
	return res, nil
}

func (o Options) annotations() map[string]string {
	a := map[string]string{ocispec.AnnotationCreated: publish.Created(o.Created)}
	for k, v := range map[string]string{ocispec.AnnotationSource: o.Source, ocispec.AnnotationRevision: o.Revision,
		ocispec.AnnotationVersion: o.Version} {
		if v != "" {
			a[k] = v
		}
	}
	return a
}

func baseLayer() (v1.Layer, error) {
	entries, err := baseEntries()
	if err != nil {
		return nil, err
	}
	return layer(entries)
}

// platformImage is the base layer and a layer holding the binary, with a
// config that runs it as 65532:65532 and varies with nothing but the inputs.
func platformImage(o Options, p v1.Platform, base v1.Layer, bin string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	binLayer, err := layer([]entry{{path: "usr/local/bin/" + o.Name, mode: 0o755, data: data}})
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer,
			History: v1.History{Created: created, CreatedBy: "solar imagebuild: users, groups, CA bundle"}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer,
			History: v1.History{Created: created, CreatedBy: "solar imagebuild: " + o.Package}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{"/usr/local/bin/" + o.Name},
		Env:        []string{"PATH=/usr/local/bin"},
		WorkingDir: "/",
		Labels:     o.annotations(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, o.annotations()).(v1.Image), nil
}
