package archive

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// checkedDep is one dependency of an archive with everything it names,
// checked.
type checkedDep struct {
	Dependency
	top ocispec.Descriptor
	// manifests are the manifests an index names (indexes nested in it
	// too), each after what it names: the order they are pushed in.
	manifests []ocispec.Descriptor
	blobs     []ocispec.Descriptor // configs and layers, each once
	sigs      []checkedDepSig
	seen      map[digest.Digest]bool
}

// checkedDepSig is a signature of a dependency: a referrer (its manifest
// names the dependency as its subject) or, without a subject, cosign's
// signature (tagged sha256-<hex>.sig).
type checkedDepSig struct {
	desc   ocispec.Descriptor
	blobs  []ocispec.Descriptor
	cosign bool
}

// plain is a descriptor without annotations or platform: what is pushed.
func plain(d ocispec.Descriptor) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: d.MediaType, ArtifactType: d.ArtifactType, Digest: d.Digest, Size: d.Size}
}

// readDependencyEntry takes an entry of index.json that is a dependency or
// one of its signatures (by its annotations); false for any other.
func (c *checker) readDependencyEntry(d ocispec.Descriptor) bool {
	kind, isDep := d.Annotations[AnnotationDependencyKind]
	_, isSig := d.Annotations[AnnotationSignatureOf]
	if !isDep && !isSig {
		return false
	}
	ref := d.Annotations[ocispec.AnnotationRefName]
	switch {
	case d.Digest.Validate() != nil || d.Digest.Algorithm() != digest.SHA256:
		c.bad("index.json names dependency %q (%s): not a sha256 digest", d.Digest, ref)
	case isDep && ref == "":
		c.bad("index.json names a %s dependency %s without %s", kind, d.Digest, ocispec.AnnotationRefName)
	case isDep && c.deps[ref].Digest != "":
		c.bad("index.json names dependency %s twice", ref)
	case isDep:
		c.deps[ref] = d
	case c.depSigs[d.Digest].Digest != "":
		c.bad("index.json names signature %s twice", d.Digest)
	default:
		c.depSigs[d.Digest] = d
	}
	return true
}

// dependencies checks the dependencies of solar-export.json, then names
// what index.json holds that it does not list.
func (c *checker) dependencies(deps []Dependency) []checkedDep {
	var out []checkedDep
	seen := map[string]bool{}
	for _, d := range deps {
		if seen[d.Reference] {
			c.bad("solar-export.json lists dependency %s twice", d.Reference)
			continue
		}
		seen[d.Reference] = true
		if cd, ok := c.dependency(d); ok {
			out = append(out, cd)
		}
	}
	for _, ref := range slices.Sorted(maps.Keys(c.deps)) {
		c.bad("index.json names dependency %s, which solar-export.json does not list", ref)
	}
	for _, d := range slices.Sorted(maps.Keys(c.depSigs)) {
		c.bad("index.json names signature %s of %s, which solar-export.json does not list", d, c.depSigs[d].Annotations[AnnotationSignatureOf])
	}
	return out
}

// dependency checks one dependency of solar-export.json.
func (c *checker) dependency(d Dependency) (checkedDep, bool) {
	what := d.Kind + " " + d.Reference
	sigs := map[digest.Digest]ocispec.Descriptor{}
	for _, sd := range d.Signatures {
		if e, ok := c.depSigs[sd]; ok && e.Annotations[AnnotationSignatureOf] == d.Reference {
			sigs[sd] = e
			delete(c.depSigs, sd)
		} else if _, twice := sigs[sd]; !twice {
			c.bad("solar-export.json lists signature %s of %s, which index.json does not name as its signature", sd, d.Reference)
		}
	}
	if d.Kind != KindChart && d.Kind != KindImage {
		c.bad("solar-export.json: dependency %s is of kind %q, not %s or %s", d.Reference, d.Kind, KindChart, KindImage)
		return checkedDep{}, false
	}
	if full, err := FullReference(d.Reference); err != nil || full != d.Reference {
		c.bad("solar-export.json: dependency %q is not a full reference (HOST/PATH:TAG or @DIGEST)", d.Reference)
		return checkedDep{}, false
	}
	if _, _, pinned := splitReference(d.Reference); pinned != "" && pinned != d.Digest {
		c.bad("solar-export.json: dependency %s is listed with digest %s", d.Reference, d.Digest)
		return checkedDep{}, false
	}
	top, ok := c.deps[d.Reference]
	if !ok {
		c.bad("solar-export.json lists %s, which index.json does not name", what)
		return checkedDep{}, false
	}
	delete(c.deps, d.Reference)
	if k := top.Annotations[AnnotationDependencyKind]; k != d.Kind {
		c.bad("%s: index.json says it is of kind %q", what, k)
		return checkedDep{}, false
	}
	if top.Digest != d.Digest || top.MediaType != d.MediaType {
		c.bad("%s: index.json names %s (%s), solar-export.json %s (%s)", what, top.Digest, top.MediaType, d.Digest, d.MediaType)
		return checkedDep{}, false
	}
	out := checkedDep{Dependency: d, top: plain(top), seen: map[digest.Digest]bool{}}
	if !c.graph(&out, out.top, 0, what) {
		return checkedDep{}, false
	}
	for _, sd := range slices.Sorted(maps.Keys(sigs)) {
		if sig, ok := c.depSignature(&out, sigs[sd], "a signature of "+what); ok {
			out.sigs = append(out.sigs, sig)
		}
	}
	return out, true
}

// depSignature checks a signature of a dependency: an image manifest that
// names the dependency as its subject, or cosign's (no subject; one).
func (c *checker) depSignature(dep *checkedDep, desc ocispec.Descriptor, what string) (checkedDepSig, bool) {
	desc = plain(desc)
	if !isManifest(desc.MediaType) {
		c.bad("%s, %s, is a %q: not an image manifest", what, desc.Digest, desc.MediaType)
		return checkedDepSig{}, false
	}
	m, ok := c.anyManifest(desc, what)
	if !ok {
		return checkedDepSig{}, false
	}
	sig := checkedDepSig{desc: desc, cosign: m.Subject == nil}
	switch {
	case m.Subject != nil && m.Subject.Digest != dep.Digest:
		c.bad("%s, %s, does not sign it: its subject is %s", what, desc.Digest, m.Subject.Digest)
		return checkedDepSig{}, false
	case sig.cosign && slices.ContainsFunc(dep.sigs, func(s checkedDepSig) bool { return s.cosign }):
		c.bad("%s, %s: a second signature without a subject (cosign's tag holds one)", what, desc.Digest)
		return checkedDepSig{}, false
	}
	for i, b := range m.children(desc.MediaType) {
		if b.Digest.Validate() != nil || b.Digest.Algorithm() != digest.SHA256 {
			c.bad("%s: its blob %d %q is not a sha256 digest", what, i, b.Digest)
			return checkedDepSig{}, false
		}
		if !c.present(b, fmt.Sprintf("%s: its blob %d", what, i)) {
			return checkedDepSig{}, false
		}
		sig.blobs = append(sig.blobs, plain(b))
	}
	return sig, true
}

// graph checks the manifest or index d of a dependency and everything it
// names (depth: how deep d is in indexes).
func (c *checker) graph(out *checkedDep, d ocispec.Descriptor, depth int, what string) bool {
	if depth >= maxDepth && !isManifest(d.MediaType) {
		c.bad("%s: %s is a %q nested %d deep: an image manifest was expected", what, d.Digest, d.MediaType, depth)
		return false
	}
	m, ok := c.anyManifest(d, what)
	if !ok {
		return false
	}
	ok = true
	for i, ch := range m.children(d.MediaType) {
		ch = plain(ch)
		if ch.Digest.Validate() != nil || ch.Digest.Algorithm() != digest.SHA256 {
			c.bad("%s: %s names %q: not a sha256 digest", what, d.Digest, ch.Digest)
			ok = false
			continue
		}
		if out.seen[ch.Digest] {
			continue
		}
		if isIndex(d.MediaType) {
			ok = c.graph(out, ch, depth+1, fmt.Sprintf("%s: the manifest %d of its index", what, i)) && ok
			continue
		}
		part := "its config"
		if i > 0 {
			part = fmt.Sprintf("its layer %d", i)
		}
		if !c.present(ch, what+": "+part) {
			ok = false
			continue
		}
		out.seen[ch.Digest] = true
		out.blobs = append(out.blobs, ch)
	}
	if depth > 0 && ok {
		out.seen[d.Digest] = true
		out.manifests = append(out.manifests, d)
	}
	return ok
}

// anyManifest reads a manifest or index the archive names.
func (c *checker) anyManifest(d ocispec.Descriptor, what string) (*anyManifest, bool) {
	if !c.present(d, what) {
		return nil, false
	}
	if d.Size > maxManifest {
		c.bad("%s: manifest %s is %d bytes: too large", what, d.Digest, d.Size)
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(c.st.dir, d.Digest.Encoded()))
	if err == nil {
		var m *anyManifest
		if m, err = decodeAny(d, b); err == nil {
			return m, true
		}
	}
	c.bad("%s: %v", what, err)
	return nil, false
}

// size is what the dependency pushes into its repository.
func (d *checkedDep) size() int64 {
	total := d.top.Size
	for _, m := range append(slices.Clone(d.manifests), d.blobs...) {
		total += m.Size
	}
	for _, s := range d.sigs {
		total += s.desc.Size
		for _, b := range s.blobs {
			total += b.Size
		}
	}
	return total
}
