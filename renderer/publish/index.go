package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// A namespace's index is one small artifact in ns/solar-index that lists
// for every repository of the namespace the latest version a publish wrote
// or found, with its manifest digest, its layers and its signature. Each
// write is a new version (0.0.N, rising, as a chart's) whose body names its
// own version, signed with the rest: the index is the highest version, and
// one whose body names another version (an older index put back under a
// tag, which needs no key) is left aside. A publish reads it first (three
// requests per namespace: the tags, the manifest, the layer) and trusts an
// entry whose layers equal what the input gives at that version: that
// repository is then not asked at all. The index is written last, after the
// namespace's charts; before a repository is pushed its entry is removed, so
// that a writer killed between the two leaves no entry claiming an older
// version.
const (
	// IndexName is the last component of an index's repository. IndexTag
	// follows its newest version, for older solar versions (which leave an
	// index of this schema aside) and people; no reader trusts it.
	IndexName = "solar-index"
	IndexTag  = "index"
	// indexSchema is the version of the layer's format: 2 names its own
	// version.
	indexSchema = 2
	// maxIndex bounds the layer read: about 180,000 entries (100 Targets
	// and 5 Releases take 40 KB), so that a namespace of 100,000 Targets
	// (issue 53's worst case) still has an index.
	maxIndex = 64 << 20
)

// IndexRepository is the repository of namespace ns's index.
func IndexRepository(ns string) string { return ns + "/" + IndexName }

// IsIndexRepository says whether a repository is a namespace's index.
func IsIndexRepository(name string) bool {
	ns, last, ok := strings.Cut(name, "/")
	return ok && ns != "" && last == IndexName
}

// Entry is what the index says of one repository.
type Entry struct {
	Version string `json:"version"`
	// Digest and Size are the version's manifest's.
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	// Layers are the digests of its layers, compared with the input's.
	Layers []string `json:"layers"`
	// Signature is the digest of its signature, when a signing run wrote
	// or found one.
	Signature string `json:"signature,omitempty"`
}

// Index is a namespace's index.
type Index struct {
	Schema    int    `json:"schema"`
	Namespace string `json:"namespace"`
	// Version is the index's own version, the tag it is written under:
	// signed with the entries, it tells an index from an older one put
	// back under a newer tag.
	Version      string           `json:"version"`
	Repositories map[string]Entry `json:"repositories"`
	// manifest is the manifest it was read from.
	manifest ocispec.Descriptor
}

// indexLayer is the index's layer: the index, and the bundle that signs it
// when the writer had a signing key (sign.Key.Bundle of the index's bytes,
// verified locally: no request more).
type indexLayer struct {
	Index  json.RawMessage `json:"index"`
	Bundle json.RawMessage `json:"bundle,omitempty"`
}

// IndexVerifier is the verifier of the indexes a signing key writes (nil
// for none).
func IndexVerifier(key *sign.Key) (*sign.Verifier, error) {
	if key == nil {
		return nil, nil
	}
	return sign.NewVerifier(key.PublicPEM())
}

// ReadIndex reads namespace ns's index, its highest version: nil without an
// error where there is none. An index whose body names another version than
// the tag it was read under is ErrIndex; with v, so is one it does not verify.
func ReadIndex(ctx context.Context, store store.Store, ns string, v *sign.Verifier) (*Index, error) {
	ix, _, err := readIndex(ctx, store, ns, v)
	return ix, err
}

// readIndex is ReadIndex, with the highest version of the index's
// repository ("" where it has none), which a writer follows also when the
// index there is not usable.
func readIndex(ctx context.Context, st store.Store, ns string, v *sign.Verifier) (*Index, string, error) {
	repo, err := st.Repository(ctx, IndexRepository(ns))
	if err != nil {
		return nil, "", err
	}
	tags, err := store.Tags(ctx, repo)
	if err != nil {
		return nil, "", fmt.Errorf("reading the index of %s: %w", ns, store.Explain(err))
	}
	newest := newestTag(tags)
	if newest == "" {
		if len(tags) > 0 {
			// An older solar's index (its one tag "index"), or tags by hand.
			return nil, "", fmt.Errorf("%w: %s has no version (an index of an older solar?)", ErrIndex, IndexRepository(ns))
		}
		return nil, "", nil
	}
	desc, b, err := fetchManifest(ctx, repo, newest)
	if err != nil {
		return nil, newest, readError(ns, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.ArtifactType != api.ArtifactTypeIndex || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != api.MediaTypeIndex || m.Layers[0].Size > maxIndex {
		return nil, newest, fmt.Errorf("%w: %s:%s is not an index of this schema", ErrIndex, IndexRepository(ns), newest)
	}
	raw, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		return nil, newest, readError(ns, err)
	}
	ix, err := decodeIndex(raw, ns, newest, v)
	if ix != nil {
		ix.manifest = desc
	}
	return ix, newest, err
}

// newestTag is the highest version among tags ("" for none).
func newestTag(tags []string) string {
	var newest *semver.Version
	for _, t := range tags {
		if v, err := semver.StrictNewVersion(t); err == nil && (newest == nil || v.GreaterThan(newest)) {
			newest = v
		}
	}
	if newest == nil {
		return ""
	}
	return newest.Original()
}

// readError is an error reading ns's index: ErrIndex where the store
// answered with something that is not an index (too large, not the content
// its digest says, its layer missing), else what the store said.
func readError(ns string, err error) error {
	if errors.Is(err, errTooLarge) || errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) || store.IsNotFound(err) {
		return fmt.Errorf("%w: %s: %v", ErrIndex, IndexRepository(ns), err)
	}
	return fmt.Errorf("reading the index of %s: %w", ns, store.Explain(err))
}

// decodeIndex decodes an index layer and checks it is namespace ns's at
// version (the tag it was read under), and, with v, signed with one of its
// keys.
func decodeIndex(raw []byte, ns, version string, v *sign.Verifier) (*Index, error) {
	var l indexLayer
	ix := &Index{}
	if err := json.Unmarshal(raw, &l); err != nil || json.Unmarshal(l.Index, ix) != nil {
		return nil, fmt.Errorf("%w: %s is damaged", ErrIndex, IndexRepository(ns))
	}
	if ix.Schema != indexSchema || ix.Namespace != ns {
		return nil, fmt.Errorf("%w: %s is of schema %d for namespace %q", ErrIndex, IndexRepository(ns), ix.Schema, ix.Namespace)
	}
	if ix.Version != version {
		// An older index put back under a newer tag: trusting it would
		// trust entries that the repositories have left behind.
		return nil, fmt.Errorf("%w: %s:%s holds the index written as %q: not the newest (replayed?)", ErrIndex, IndexRepository(ns), version, ix.Version)
	}
	for name, e := range ix.Repositories {
		if err := e.check(ns, name); err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %v", ErrIndex, IndexRepository(ns), name, err)
		}
	}
	if v != nil {
		d := digest.FromBytes(l.Index)
		if len(l.Bundle) == 0 {
			return nil, fmt.Errorf("%w: %s is not signed", ErrIndex, IndexRepository(ns))
		}
		if err := v.VerifyBundle(l.Bundle, ocispec.Descriptor{Digest: d, Size: int64(len(l.Index))}); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrIndex, IndexRepository(ns), err)
		}
	}
	if ix.Repositories == nil {
		ix.Repositories = map[string]Entry{}
	}
	return ix, nil
}

// check says what is wrong with an entry of namespace ns's index for
// repository name: another namespace's repository, a version that is not
// one, digests that are not.
func (e Entry) check(ns, name string) error {
	if !strings.HasPrefix(name, ns+"/") || IsIndexRepository(name) {
		return errors.New("not a repository of the namespace")
	}
	if _, err := semver.StrictNewVersion(e.Version); err != nil {
		return fmt.Errorf("version %q: %v", e.Version, err)
	}
	for _, d := range append([]string{e.Digest}, e.Layers...) {
		if _, err := digest.Parse(d); err != nil {
			return fmt.Errorf("digest %q: %v", d, err)
		}
	}
	if _, err := digest.Parse(e.Signature); e.Signature != "" && err != nil {
		return fmt.Errorf("signature %q: %v", e.Signature, err)
	}
	if e.Size <= 0 || e.Size > maxChartManifest || len(e.Layers) == 0 {
		return errors.New("no manifest size or no layers")
	}
	return nil
}

// encodeIndex is the index's layer, signed with key when given.
func encodeIndex(ix *Index, key *sign.Key) ([]byte, error) {
	b, err := json.Marshal(ix) // maps in key order: the same index, the same bytes
	if err != nil {
		return nil, err
	}
	l := indexLayer{Index: b}
	if key != nil {
		if l.Bundle, err = key.Bundle(IndexRepository(ix.Namespace), digest.FromBytes(b)); err != nil {
			return nil, err
		}
	}
	return json.Marshal(l)
}

// Newer says whether version a is higher than b ("" is lowest).
func newer(a, b string) bool {
	va, err := semver.StrictNewVersion(a)
	if err != nil {
		return false
	}
	vb, err := semver.StrictNewVersion(b)
	return err != nil || va.GreaterThan(vb)
}

// Merge sets ix's entries from entries, except where ix already names a
// higher version (another writer's, written since): versions only rise.
// An entry without a signature keeps the one ix has for the same manifest.
func (ix *Index) Merge(entries map[string]Entry) {
	for name, e := range entries {
		old, ok := ix.Repositories[name]
		if ok && newer(old.Version, e.Version) {
			continue
		}
		if ok && e.Signature == "" && old.Digest == e.Digest {
			e.Signature = old.Signature
		}
		ix.Repositories[name] = e
	}
}

// Remove deletes the entries of repos from ix.
func (ix *Index) Remove(repos []string) {
	for _, r := range repos {
		delete(ix.Repositories, r)
	}
}

func (ix *Index) clone() *Index {
	c := *ix
	c.Repositories = maps.Clone(ix.Repositories)
	return &c
}

// equal says whether two indexes hold the same entries.
func (ix *Index) equal(o *Index) bool {
	a, _ := json.Marshal(ix)
	b, _ := json.Marshal(o)
	return bytes.Equal(a, b)
}
