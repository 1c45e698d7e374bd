package main

import (
	"errors"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/spf13/pflag"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/sitereport"
)

const exportDeltaLong = `

With --site SITE --reports DIR, the export is relative to what the site
confirmed its registry holds: the list of its registry's tags and digests
that its last report archive carried (solar export-reports --registry on the
site, solar import-reports --into DIR here). A version whose manifest the
site holds is left out with its signatures, and so is a dependency whose tag
resolves to a manifest the site holds (it is not read further); the rest,
what changed since, is carried. -o json lists what was left out (leftOut).
If the site holds everything, nothing is written and the exit code is 1.
push on the site checks a delta as any archive: a version must still be the
one after the registry's latest.`

// deltaFlags are export's --site and --reports.
type deltaFlags struct {
	site, reports string
}

func (d *deltaFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&d.site, "site", "", "with --reports: leave out what this site confirmed its registry holds (by manifest digest): a delta")
	fl.StringVar(&d.reports, "reports", "", "with --site: the folder solar import-reports imported the site's report archives into")
}

// have reads what the site confirmed: nil without --site.
func (d *deltaFlags) have(g *globals) (func(digest.Digest) bool, error) {
	switch {
	case d.site == "" && d.reports == "":
		return nil, nil
	case d.site == "" || d.reports == "":
		return nil, errors.New("--site and --reports go together: the site whose confirmed registry state the export is relative to, and where its reports were imported")
	}
	c, err := sitereport.ReadConfirmed(d.reports, d.site)
	if err != nil {
		return nil, err
	}
	g.say("relative to site %s: %s of %s confirmed by its archive exported at %s", c.Site(), english.Count(c.Len(), "tag"),
		c.Registry(), c.ExportedAt().UTC().Format(time.RFC3339))
	return func(d digest.Digest) bool { return c.HasDigest(string(d)) }, nil
}

// sayLeftOut says on stderr what a delta left out.
func (g *globals) sayLeftOut(s *archive.Summary, d *deltaFlags) {
	if d.site != "" {
		g.say("left out %s (versions and dependencies) that site %s holds", english.Count(len(s.LeftOut), "artifact"), d.site)
	}
}
