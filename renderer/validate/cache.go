package validate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/solar-pipeline/solar/internal/cachefile"
	"github.com/solar-pipeline/solar/policies"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/schemas"
)

// cacheFile is the cache in Options.CacheDir: the keys of the objects that
// passed the schemas and the policy results of the last input, under the
// stamp of what checked them.
const cacheFile = "vet-cache.json"

// cacheLimit bounds the keys kept from earlier runs.
const cacheLimit = 200_000

type key = [sha256.Size]byte

// cache remembers what validation already found: an object whose canonical
// content passed the same schemas passes again, and the same policy input gives
// the same results. Only successes of the schema step are kept, so every
// problem is always computed afresh. The stamp is the digest of the schemas,
// the policies and the executable (cachefile.Executable): any change to one of
// them empties the cache.
type cache struct {
	dir, stamp string
	valid      map[key]bool // read from the file
	seen       []key        // passed in this run
	policyKey  key
	policies   []policyResult
	dirty      bool
}

type cacheData struct {
	Stamp     string         `json:"stamp"`
	Valid     [][]byte       `json:"valid"`
	PolicyKey []byte         `json:"policyKey,omitempty"`
	Policies  []policyResult `json:"policies,omitempty"`
}

// openCache reads the cache in dir; a missing, unreadable or stale one is empty.
func openCache(dir string, policyDirs []string) *cache {
	if dir == "" {
		return nil
	}
	h := sha256.New()
	sources := map[string]fs.FS{"(schemas)": schemas.FS, "(policies)": policies.FS}
	for _, d := range policyDirs {
		sources[d] = os.DirFS(d)
	}
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		fsys := sources[name]
		_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) != ".cue" {
				return nil
			}
			b, _ := fs.ReadFile(fsys, p)
			fmt.Fprintf(h, "%s/%s\x00%d\x00", name, p, len(b))
			h.Write(b)
			return nil
		})
	}
	h.Write([]byte(cachefile.Executable()))
	c := &cache{dir: dir, stamp: hex.EncodeToString(h.Sum(nil)), valid: map[key]bool{}}
	b, err := os.ReadFile(filepath.Join(dir, cacheFile))
	var d cacheData
	if err != nil || json.Unmarshal(b, &d) != nil || d.Stamp != c.stamp {
		return c
	}
	for _, k := range d.Valid {
		if len(k) == sha256.Size {
			c.valid[key(k)] = true
		}
	}
	if len(d.PolicyKey) == sha256.Size {
		c.policyKey, c.policies = key(d.PolicyKey), d.Policies
	}
	return c
}

// objectKey is the digest of o's kind and canonical content; ok is false when it
// has none (a value JSON cannot hold).
func objectKey(o *load.Object) (k key, ok bool) {
	b, err := json.Marshal(o.Fields)
	if err != nil {
		return k, false
	}
	return sha256.Sum256(append([]byte(o.Kind+"\x00"), b...)), true
}

// has reports whether an object of this key passed the schemas before. It
// only reads, so the workers of check call it at once.
func (c *cache) has(k key) bool {
	return c != nil && c.valid[k]
}

// keep records that an object of this key passed the schemas in this run.
func (c *cache) keep(k key) {
	if c != nil {
		c.seen = append(c.seen, k)
		c.dirty = c.dirty || !c.valid[k]
	}
}

// policyResults returns the key of the policy input of the valid objects of
// these keys (the input is a function of them: the objects, the PipelineConfig
// among them and the bindings they make), and the results cached for it, if
// any. keys is nil when an object has no key.
func (c *cache) policyResults(keys []key) (k key, results []policyResult, ok bool) {
	if c == nil || keys == nil {
		return k, nil, false // no cache, or an object without a key
	}
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, func(a, b key) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for _, s := range sorted {
		h.Write(s[:])
	}
	h.Sum(k[:0])
	return k, c.policies, c.policyKey == k
}

// setPolicyResults records the results of the policy input of key k.
func (c *cache) setPolicyResults(k key, results []policyResult) {
	if c != nil && k != (key{}) {
		c.policyKey, c.policies, c.dirty = k, results, true
	}
}

// save writes the cache if this run added to it: the keys of this run first,
// then those of earlier runs up to cacheLimit. It is best effort: a cache that
// cannot be written is only slower next time.
func (c *cache) save() {
	if c == nil || !c.dirty {
		return
	}
	d := cacheData{Stamp: c.stamp, PolicyKey: c.policyKey[:], Policies: c.policies}
	kept := map[key]bool{}
	add := func(k key) {
		if !kept[k] && len(kept) < cacheLimit {
			kept[k] = true
			d.Valid = append(d.Valid, bytes.Clone(k[:]))
		}
	}
	for _, k := range c.seen {
		add(k)
	}
	old := make([]key, 0, len(c.valid))
	for k := range c.valid {
		old = append(old, k)
	}
	slices.SortFunc(old, func(a, b key) int { return bytes.Compare(a[:], b[:]) })
	for _, k := range old {
		add(k)
	}
	if b, err := json.Marshal(d); err == nil {
		_ = cachefile.Write(c.dir, cacheFile, b)
	}
}
