package sitereport

import (
	"errors"
	"regexp"
	"time"

	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// Format is the version of a report archive's Header and StateFormat of
// the folder's files. v2 added the site's device states and what its
// registry holds; Import reads a v1 archive (reports only) as well, and
// Open a v1 file.
const (
	Format      = "solar-site-reports/v2"
	StateFormat = "solar-imported-reports/v2"
	formatV1    = "solar-site-reports/v1"
	stateV1     = "solar-imported-reports/v1"
)

// layerItems bounds the layers of a v2 archive besides the reports
// (api.MediaTypeSiteDevices, api.MediaTypeSitePushed): a JSON array of at
// most layerItems Devices or Pushed entries each, as many layers as it
// takes.
const layerItems = 1000

// MaxDevices and MaxPushed bound the device states and the registry's
// tags an archive carries.
const (
	MaxDevices = 100_000
	MaxPushed  = 100_000
)

// RepositoryPrefix is where a site's reports are in the archive:
// solar-reports/<site>.
const RepositoryPrefix = "solar-reports/"

// ErrRefused wraps every reason Import refuses an archive.
var ErrRefused = errors.New("report archive refused, nothing imported")

// Header is a report archive's config: the site, when the reports left it,
// and how many there are.
type Header struct {
	Format     string    `json:"format"`
	Site       string    `json:"site"`
	ExportedAt time.Time `json:"exportedAt"`
	Reports    int       `json:"reports"`
	// Fleet is the fleet's bucket whose device states the archive carries,
	// Devices how many; "": the site's fleet was not read (no --nats), and
	// the archive carries no device state.
	Fleet   string `json:"fleet,omitempty"`
	Devices int    `json:"devices,omitempty"`
	// Registry is the site's registry, HOST[/PREFIX], whose every tag the
	// archive lists, Pushed how many; "": not listed.
	Registry string `json:"registry,omitempty"`
	Pushed   int    `json:"pushed,omitempty"`
}

// Report is one TargetReport as an archive carries it: its Target and its
// spec, nothing else (a TargetReport holds no Secret and no token, and the
// typed spec drops any field it does not know).
type Report struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   Metadata          `json:"metadata"`
	Spec       targetreport.Spec `json:"spec"`
}

// Metadata is a Report's Target.
type Metadata struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Limits bound what Import reads: the archive's (renderer/archive) and
// each report's bytes (Limits.Blob).
var Limits = archive.Limits{Entries: 100_000, Blob: 4 << 20, Total: 1 << 30, Metadata: 16 << 20}

// maxHeader bounds the Header read.
const maxHeader = 64 << 10

// label is a DNS label: a site's or a namespace's name; subdomain a
// Target's (at most 253 characters).
var (
	label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ValidSite says whether site can name a site: a DNS label.
func ValidSite(site string) bool { return label.MatchString(site) }

// validTarget says whether ns/name can name a Target.
func validTarget(ns, n string) bool {
	return label.MatchString(ns) && len(n) <= 253 && subdomain.MatchString(n)
}
