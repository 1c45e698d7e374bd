package objdiff

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"k8s.io/utils/lru"
)

// Cache holds what the Walkers of one diff render, so that work the same on
// many Targets is done once: a chart archive loaded (an application chart
// every Target installs, a release chart the Targets of a namespace share),
// and a release rendered (the same chart, values, name and namespace). Both
// are keyed by content, never by name, and bounded: a diff of 100,000
// Targets keeps the most recently used. A Cache is safe for concurrent use;
// the objects it gives are shared and must not be changed.
type Cache struct {
	charts  *lru.Cache // sha256 of the archive → *chartv2.Chart
	renders *lru.Cache // renderKey → []Object
}

// NewCache is a Cache of at most size renders and size loaded charts.
func NewCache(size int) *Cache {
	return &Cache{charts: lru.New(size), renders: lru.New(size)}
}

// renderKey is what a render depends on: the archive, the values (as JSON,
// keys sorted), the release's name and namespace, the level and whether the
// chart is an application chart (whose values schema is not checked).
type renderKey struct {
	archive, values [sha256.Size]byte
	name, namespace string
	level           int
	app             bool
}

// key is the renderKey of r at level; ok is false when r is not cached: a
// bootstrap chart (level 1), which is a Target's own, or one whose values
// do not marshal.
func (r release) key(level int) (renderKey, bool) {
	if level == 1 || r.chart != nil {
		return renderKey{}, false
	}
	values, err := json.Marshal(r.values)
	if err != nil {
		return renderKey{}, false
	}
	return renderKey{archive: sha256.Sum256(r.archive), values: sha256.Sum256(values), name: r.name, namespace: r.namespace, level: level, app: r.app}, true
}

// rendered is a release's objects rendered before, if c holds them.
func (c *Cache) rendered(k renderKey) ([]Object, bool) {
	if c == nil {
		return nil, false
	}
	v, ok := c.renders.Get(k)
	if !ok {
		return nil, false
	}
	return v.([]Object), true
}

// keep holds a release's objects.
func (c *Cache) keep(k renderKey, objs []Object) {
	if c != nil {
		c.renders.Add(k, objs)
	}
}

// load loads a chart archive; with keep, one without dependencies is
// loaded once and shared: Helm copies a chart's values before it coalesces
// them, its engine only reads the chart, and ProcessDependencies, which
// changes a chart, has nothing to do for it. One with dependencies is loaded
// anew each time. A bootstrap chart, a Target's own, is not kept.
func (c *Cache) load(archive []byte, keep bool) (*chartv2.Chart, error) {
	sum := sha256.Sum256(archive)
	if c != nil {
		if v, ok := c.charts.Get(sum); ok {
			return v.(*chartv2.Chart), nil
		}
	}
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	if c != nil && keep && ch.Metadata != nil && ch.Metadata.Dependencies == nil && len(ch.Dependencies()) == 0 {
		c.charts.Add(sum, ch)
	}
	return ch, nil
}

// docKey is a rendered document, where it was rendered.
type docKey struct {
	doc, namespace string
	level          int
}

// docs are the documents decoded in one walk of a pair, shared by its two
// sides: what did not change between them is decoded (and made JSON) once.
type docs map[docKey][]Object
