package sitereport

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/opencontainers/go-digest"
)

// Confirmed is what a site confirmed its registry holds, as the last report
// archive that listed it said: the manifest digests of its tags, and when
// that archive left the site. What an export relative to the site's state
// leaves out.
type Confirmed struct {
	site       string
	registry   string
	exportedAt time.Time
	digests    map[digest.Digest]bool
	tags       map[string]digest.Digest
}

// ReadConfirmed reads what the site confirmed from the reports imported
// into dir (solar import-reports --into). A site never imported, or whose
// archives never listed its registry (export-reports --registry), is an
// error naming it.
func ReadConfirmed(dir, site string) (*Confirmed, error) {
	if !ValidSite(site) {
		return nil, fmt.Errorf("site %q: a site is named as a DNS label (lowercase letters, digits, -)", site)
	}
	imp, err := readState(filepath.Join(dir, site+".json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no report archive of site %s was imported into %s (solar import-reports --into %s): what the site holds is not known", site, dir, dir)
	case err != nil:
		return nil, err
	case imp.Registry == "":
		return nil, fmt.Errorf("the report archives of site %s imported into %s list nothing its registry holds: the site's solar export-reports ran without --registry", site, dir)
	}
	c := &Confirmed{site: site, registry: imp.Registry, exportedAt: imp.PushedAt,
		digests: map[digest.Digest]bool{}, tags: map[string]digest.Digest{}}
	for _, p := range imp.Pushed {
		c.digests[p.Digest] = true
		c.tags[p.Repository+":"+p.Tag] = p.Digest
	}
	return c, nil
}

// Site is the site that confirmed.
func (c *Confirmed) Site() string { return c.site }

// Registry is the site's registry listed, HOST[/PREFIX].
func (c *Confirmed) Registry() string { return c.registry }

// ExportedAt is when the archive that listed the registry left the site.
func (c *Confirmed) ExportedAt() time.Time { return c.exportedAt }

// HasDigest says whether a tag of the site's registry named the manifest d.
func (c *Confirmed) HasDigest(d string) bool { return c.digests[digest.Digest(d)] }

// Tag is the digest of the manifest the tag of repository (HOST/PATH) named
// on the site, or "".
func (c *Confirmed) Tag(repository, tag string) string {
	return string(c.tags[repository+":"+tag])
}

// Len is how many tags the site listed.
func (c *Confirmed) Len() int { return len(c.tags) }
