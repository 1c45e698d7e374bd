package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/solar-pipeline/solar/api"
	"oras.land/oras-go/v2/registry"
)

// checked is one version of an archive with everything it names, checked.
type checked struct {
	Version
	manifest ocispec.Descriptor
	blobs    []ocispec.Descriptor // config and layers
	sigs     []checkedSig
}

type checkedSig struct {
	desc  ocispec.Descriptor // the referrer manifest
	blobs []ocispec.Descriptor
}

// checker gathers every problem of an archive, to name them all at once.
type checker struct {
	st       *staged
	tagged   map[string]ocispec.Descriptor        // index.json: ref name -> manifest
	untagged map[digest.Digest]ocispec.Descriptor // index.json: signatures
	deps     map[string]ocispec.Descriptor        // index.json: dependencies by reference
	depSigs  map[digest.Digest]ocispec.Descriptor // index.json: their signatures
	used     map[digest.Digest]bool
	problems []string
}

func (c *checker) bad(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// check checks index.json and solar-export.json against each other and
// against the blobs: each names the same versions, dependencies and
// signatures, every manifest and blob they name is there at its size,
// every signature signs its version or dependency, and every blob is
// named.
func (st *staged) check() ([]checked, []checkedDep, error) {
	index, export, err := st.parseMeta()
	if err != nil {
		return nil, nil, err
	}
	c := &checker{st: st, tagged: map[string]ocispec.Descriptor{}, untagged: map[digest.Digest]ocispec.Descriptor{},
		deps: map[string]ocispec.Descriptor{}, depSigs: map[digest.Digest]ocispec.Descriptor{}, used: map[digest.Digest]bool{}}
	c.readIndex(index)
	var out []checked
	repos := map[string]bool{}
	for _, v := range export.Versions {
		if repos[v.Repository] {
			c.bad("solar-export.json lists repository %s twice", v.Repository)
			continue
		}
		repos[v.Repository] = true
		if cv, ok := c.version(v); ok {
			out = append(out, cv)
		}
	}
	deps := c.dependencies(export.Dependencies)
	for _, ref := range slices.Sorted(maps.Keys(c.tagged)) {
		c.bad("index.json names %s, which solar-export.json does not list", ref)
	}
	for _, d := range slices.Sorted(maps.Keys(c.untagged)) {
		c.bad("index.json names signature %s, which solar-export.json does not list", d)
	}
	// A blob nothing names, when nothing else is wrong (what is, leaves
	// blobs unnamed).
	for _, d := range slices.Sorted(maps.Keys(st.blobs)) {
		if len(c.problems) == 0 && !c.used[d] {
			c.bad("blobs/sha256/%s is in the archive, but nothing names it", d.Encoded())
		}
	}
	switch len(c.problems) {
	case 0:
		return out, deps, nil
	case 1:
		return nil, nil, refuse("%s", c.problems[0])
	}
	return nil, nil, fmt.Errorf("%w:\n  %s", ErrRefused, strings.Join(c.problems, "\n  "))
}

// parseMeta reads oci-layout, index.json and solar-export.json.
func (st *staged) parseMeta() (*ocispec.Index, *Manifest, error) {
	for _, name := range []string{ocispec.ImageLayoutFile, ocispec.ImageIndexFile, ExportFile} {
		if _, ok := st.meta[name]; !ok {
			return nil, nil, refuse("it has no %s: not an archive of solar export", name)
		}
	}
	var layout ocispec.ImageLayout
	if err := json.Unmarshal(st.meta[ocispec.ImageLayoutFile], &layout); err != nil || layout.Version != ocispec.ImageLayoutVersion {
		return nil, nil, refuse("oci-layout is not {\"imageLayoutVersion\":%q}", ocispec.ImageLayoutVersion)
	}
	var index ocispec.Index
	if err := json.Unmarshal(st.meta[ocispec.ImageIndexFile], &index); err != nil {
		return nil, nil, refuse("index.json: %v", err)
	}
	if index.SchemaVersion != 2 {
		return nil, nil, refuse("index.json: schemaVersion %d, not 2", index.SchemaVersion)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(st.meta[ExportFile]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, nil, refuse("%s: %v", ExportFile, err)
	}
	switch {
	case m.Format != Format && m.Format != FormatDependencies:
		return nil, nil, refuse("%s is of format %q; this solar reads %q and %q", ExportFile, m.Format, Format, FormatDependencies)
	case m.Format == Format && len(m.Dependencies) > 0:
		return nil, nil, refuse("%s is of format %q but lists dependencies (%q carries them)", ExportFile, Format, FormatDependencies)
	}
	return &index, &m, nil
}

// readIndex sorts index.json's entries into versions and signatures.
func (c *checker) readIndex(index *ocispec.Index) {
	for _, d := range index.Manifests {
		if c.readDependencyEntry(d) {
			continue
		}
		if d.MediaType != ocispec.MediaTypeImageManifest || d.Digest.Validate() != nil || d.Digest.Algorithm() != digest.SHA256 {
			c.bad("index.json names %q (%s): not an OCI image manifest by sha256 digest", d.Digest, d.MediaType)
			continue
		}
		ref := d.Annotations[ocispec.AnnotationRefName]
		switch {
		case ref != "" && c.tagged[ref].Digest != "":
			c.bad("index.json names %s twice", ref)
		case ref != "":
			c.tagged[ref] = d
		case d.ArtifactType != api.MediaTypeSigstoreBundle:
			c.bad("index.json names %s untagged, and not as a signature (artifactType %q)", d.Digest, d.ArtifactType)
		case c.untagged[d.Digest].Digest != "":
			c.bad("index.json names signature %s twice", d.Digest)
		default:
			c.untagged[d.Digest] = d
		}
	}
}

// version checks one version of solar-export.json.
func (c *checker) version(v Version) (checked, bool) {
	name := v.Repository + ":" + v.Version
	// Its signatures first: a version found wrong leaves none to be
	// named as unlisted.
	sigs := map[digest.Digest]ocispec.Descriptor{}
	for _, sd := range v.Signatures {
		if d, ok := c.untagged[sd]; ok {
			sigs[sd] = d
			delete(c.untagged, sd)
		} else if _, twice := sigs[sd]; !twice {
			c.bad("solar-export.json lists signature %s of %s, which index.json does not name", sd, name)
		}
	}
	if err := (registry.Reference{Registry: "localhost", Repository: v.Repository}).ValidateRepository(); err != nil || !filepath.IsLocal(v.Repository) {
		c.bad("solar-export.json: %q is not a repository name", v.Repository)
		return checked{}, false
	}
	if _, err := semver.StrictNewVersion(v.Version); err != nil {
		c.bad("solar-export.json: %s: %q is not a version", v.Repository, v.Version)
		return checked{}, false
	}
	desc, ok := c.tagged[name]
	if !ok {
		c.bad("solar-export.json lists %s, which index.json does not name", name)
		return checked{}, false
	}
	delete(c.tagged, name)
	if desc.Digest != v.Manifest {
		c.bad("%s: index.json names manifest %s, solar-export.json %s", name, desc.Digest, v.Manifest)
		return checked{}, false
	}
	out := checked{Version: v, manifest: ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}}
	m, ok := c.manifest(desc, "the manifest of "+name)
	if !ok {
		return checked{}, false
	}
	if m.Subject != nil {
		c.bad("%s: its manifest names a subject: not a chart version", name)
	}
	out.blobs = c.blobs(m, name)
	for _, sd := range slices.Sorted(maps.Keys(sigs)) {
		desc := sigs[sd]
		what := "a signature of " + name
		sm, ok := c.manifest(desc, what)
		if !ok {
			continue
		}
		if sm.Subject == nil || sm.Subject.Digest != v.Manifest {
			c.bad("%s, %s, does not sign that version's manifest %s", what, sd, v.Manifest)
			continue
		}
		if sm.ArtifactType != api.MediaTypeSigstoreBundle {
			c.bad("%s, %s, is of artifactType %q, not %q", what, sd, sm.ArtifactType, api.MediaTypeSigstoreBundle)
			continue
		}
		out.sigs = append(out.sigs, checkedSig{desc: ocispec.Descriptor{MediaType: desc.MediaType, ArtifactType: api.MediaTypeSigstoreBundle,
			Digest: desc.Digest, Size: desc.Size}, blobs: c.blobs(sm, what)})
	}
	return out, true
}

// present says whether the blob d is in the archive at its size, and marks
// it used.
func (c *checker) present(d ocispec.Descriptor, what string) bool {
	size, ok := c.st.blobs[d.Digest]
	switch {
	case !ok:
		c.bad("%s, %s, is missing from the archive", what, d.Digest)
		return false
	case size != d.Size:
		c.bad("%s, %s, is %d bytes, named with %d", what, d.Digest, size, d.Size)
		return false
	}
	c.used[d.Digest] = true
	return true
}

// manifest reads a manifest the archive names.
func (c *checker) manifest(d ocispec.Descriptor, what string) (*ocispec.Manifest, bool) {
	if !c.present(d, what) {
		return nil, false
	}
	m, err := c.st.manifest(d)
	if err != nil {
		c.bad("%s: %v", what, err)
		return nil, false
	}
	return m, true
}

// blobs checks the config and layers of a manifest.
func (c *checker) blobs(m *ocispec.Manifest, what string) []ocispec.Descriptor {
	var out []ocispec.Descriptor
	for i, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		part := "its config"
		if i > 0 {
			part = fmt.Sprintf("its layer %d", i)
		}
		if d.Digest.Validate() != nil || d.Digest.Algorithm() != digest.SHA256 {
			c.bad("%s: %s %q is not a sha256 digest", what, part, d.Digest)
			continue
		}
		if c.present(d, what+": "+part) {
			out = append(out, ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size})
		}
	}
	return out
}
