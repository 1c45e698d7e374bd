package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/solar-pipeline/solar/internal/cachefile"
)

// packCacheFile is the PackCache's file in its folder.
const packCacheFile = "pack-cache.json"

// packCacheLimit bounds the entries kept from earlier runs.
const packCacheLimit = 200_000

// PackCache remembers the layer digests a job's Pack gave at a version, keyed
// by the job's Key, the version and the executable (cachefile.Executable), so
// that an unchanged job is compared with the store's latest version without
// packing it again. It says nothing about any store: what is in the store is
// always read from the store.
type PackCache struct {
	dir string

	mu    sync.Mutex
	old   map[string][]string // read from the file
	used  map[string][]string // looked up or packed in this run
	dirty bool
}

// OpenPackCache reads the cache in dir; a missing or unreadable one is
// empty. An empty dir gives no cache (nil, which every method accepts).
func OpenPackCache(dir string) *PackCache {
	if dir == "" {
		return nil
	}
	c := &PackCache{dir: dir, old: map[string][]string{}, used: map[string][]string{}}
	if b, err := os.ReadFile(filepath.Join(dir, packCacheFile)); err == nil {
		_ = json.Unmarshal(b, &c.old) // a damaged cache is an empty one
	}
	return c
}

// key is the cache key of a job whose Key gave content, at a version; "" when
// there is none.
func (c *PackCache) key(content, version string) string {
	if c == nil || content == "" {
		return ""
	}
	h := sha256.Sum256([]byte(cachefile.Executable() + "\x00" + content + "\x00" + version))
	return hex.EncodeToString(h[:])
}

func (c *PackCache) get(k string) ([]string, bool) {
	if k == "" {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.used[k]
	if !ok {
		if l, ok = c.old[k]; ok {
			c.used[k] = l
		}
	}
	return l, ok
}

func (c *PackCache) put(k string, layers []string) {
	if k == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used[k], c.dirty = layers, true
}

// Save writes the cache when this run packed something new: the entries of
// this run, then those of earlier runs up to a bound. It is best effort: a
// cache that cannot be written only makes the next run slower.
func (c *PackCache) Save() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return
	}
	out := maps.Clone(c.used)
	for _, k := range slices.Sorted(maps.Keys(c.old)) {
		if len(out) >= packCacheLimit {
			break
		}
		if _, ok := out[k]; !ok {
			out[k] = c.old[k]
		}
	}
	if b, err := json.Marshal(out); err == nil {
		_ = cachefile.Write(c.dir, packCacheFile, b)
	}
}
