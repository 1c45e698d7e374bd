package sitereport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Imported is what Import wrote for a site: its reports, when they left
// the site and when they came in, and the archive's manifest digest.
type Imported struct {
	Format     string        `json:"format"`
	Site       string        `json:"site"`
	ExportedAt time.Time     `json:"exportedAt"`
	ImportedAt time.Time     `json:"importedAt"`
	Manifest   digest.Digest `json:"manifest"`
	Reports    []Report      `json:"reports"`
	// Fleet is the bucket the site's Devices were read from ("": the
	// archive carried none).
	Fleet   string   `json:"fleet,omitempty"`
	Devices []Device `json:"devices,omitempty"`
	// Registry is the site's registry, HOST[/PREFIX], Pushed its tags,
	// PushedAt when that list left the site: an archive that lists none
	// keeps the list of the last one that did.
	Registry string    `json:"registry,omitempty"`
	Pushed   []Pushed  `json:"pushed,omitempty"`
	PushedAt time.Time `json:"pushedAt,omitzero"`
}

// Import reads the report archive file, bounded by Limits, checks all of
// it as solar push checks an archive, verifies its signature with v (the
// site's public key), reads its Header and every report strictly, and
// refuses it unless it was exported after the last archive imported from
// its site into the folder into (a replay, or an older archive). Only then
// does it write the site's file of into (Save), dated now. Every refusal
// wraps ErrRefused; nothing is written on any error.
func Import(ctx context.Context, file string, v *sign.Verifier, into string, now time.Time) (*Imported, error) {
	if v == nil {
		return nil, errors.New("a report archive is verified: the site's public key is required")
	}
	u, err := archive.Unpack(ctx, file, Limits)
	if errors.Is(err, archive.ErrRefused) {
		// Its words are push's ("nothing pushed"): said as import's.
		return nil, fmt.Errorf("%w: %s", ErrRefused, strings.Replace(err.Error(), archive.ErrRefused.Error()+": ", "", 1))
	}
	if err != nil {
		return nil, err
	}
	defer u.Close()
	imp, err := read(ctx, u, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	imp.ImportedAt = now.UTC()
	if err := save(into, imp); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return imp, nil
}

// refuse is an error naming what is wrong with the archive.
func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
}

// read verifies the one version of the unpacked archive u and reads it.
func read(ctx context.Context, u *archive.Unpacked, v *sign.Verifier) (*Imported, error) {
	if len(u.Versions) != 1 || !strings.HasPrefix(u.Versions[0].Repository, RepositoryPrefix) {
		return nil, refuse("not a report archive: it holds %d repositories, a report archive one, %s<site> (solar export-reports writes it)",
			len(u.Versions), RepositoryPrefix)
	}
	ver := u.Versions[0]
	site := strings.TrimPrefix(ver.Repository, RepositoryPrefix)
	repo, err := u.Repository(ctx, ver.Repository)
	if err != nil {
		return nil, err
	}
	desc, err := repo.Resolve(ctx, ver.Version)
	if err != nil {
		return nil, err
	}
	target, ok := repo.(sign.Target)
	if !ok {
		return nil, fmt.Errorf("the unpacked archive cannot be read for signatures")
	}
	if err := v.Check(ctx, target, sign.Subject{Repository: ver.Repository, Version: ver.Version, Manifest: desc}); err != nil {
		return nil, refuse("its signature: %w", err)
	}
	m, err := store.ReadManifest(ctx, repo, desc)
	if err != nil {
		return nil, refuse("%v", err)
	}
	imp := &Imported{Format: StateFormat, Site: site, Manifest: desc.Digest}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	h := readHeader(ctx, repo, m, site, bad)
	ls := &lists{}
	if h != nil {
		ls.registry = h.Registry
	}
	seen := map[string]bool{}
	reports := 0
	for i, l := range layers(m) {
		if h != nil && h.Format != formatV1 && ls.read(ctx, repo, l, i+1, bad) {
			continue
		}
		reports++
		r, ok := readReport(ctx, repo, l, i+1, bad)
		id := r.Metadata.Namespace + "/" + r.Metadata.Name
		switch {
		case !ok:
		case seen[id]:
			bad("report %d: %s is reported twice", i+1, id)
		default:
			seen[id] = true
			imp.Reports = append(imp.Reports, r)
		}
	}
	if h != nil {
		if h.Reports != reports {
			bad("its header counts %d reports, it holds %d", h.Reports, reports)
		}
		ls.checkHeader(h, bad)
	}
	switch len(problems) {
	case 0:
		imp.ExportedAt = h.ExportedAt.UTC()
		imp.Fleet, imp.Devices, imp.Registry, imp.Pushed = h.Fleet, ls.devices, h.Registry, ls.pushed
		if h.Registry != "" {
			imp.PushedAt = imp.ExportedAt
		}
		return imp, nil
	case 1:
		return nil, refuse("%s", problems[0])
	}
	return nil, fmt.Errorf("%w:\n  %s", ErrRefused, strings.Join(problems, "\n  "))
}

// layers are m's layers; an archive of nothing (no report, no list) has
// one, OCI's empty descriptor, which publish writes for an artifact
// without layers: none.
func layers(m *ocispec.Manifest) []ocispec.Descriptor {
	if len(m.Layers) == 1 && m.Layers[0].MediaType == ocispec.MediaTypeEmptyJSON && m.Layers[0].Digest == ocispec.DescriptorEmptyJSON.Digest {
		return nil
	}
	return m.Layers
}

// readHeader reads and checks the archive's Header (its config).
func readHeader(ctx context.Context, f content.Fetcher, m *ocispec.Manifest, site string, bad func(string, ...any)) *Header {
	if m.ArtifactType != api.ArtifactTypeSiteReports || m.Config.MediaType != api.MediaTypeSiteReportsConfig {
		bad("its manifest is of artifactType %q with a config of %q: not a report archive", m.ArtifactType, m.Config.MediaType)
		return nil
	}
	var h Header
	if err := decodeBlob(ctx, f, m.Config, maxHeader, &h); err != nil {
		bad("its header: %v", err)
		return nil
	}
	switch {
	case h.Format != Format && h.Format != formatV1:
		bad("its header is of format %q; this solar reads %q and %q", h.Format, Format, formatV1)
	case h.Format == formatV1 && (h.Fleet != "" || h.Devices != 0 || h.Registry != "" || h.Pushed != 0):
		bad("its header is of format %q, which carries no device states and no registry's tags, yet it names them", h.Format)
	case len(h.Fleet) > maxWord:
		bad("its header's fleet is %d bytes, more than the limit of %d", len(h.Fleet), maxWord)
	case h.Registry != "" && !validRegistry(h.Registry):
		bad("its header's registry %.300q is not a registry HOST[/PREFIX]", h.Registry)
	case h.Site != site:
		bad("its header names site %q, its repository %s%s", h.Site, RepositoryPrefix, site)
	case !ValidSite(site):
		bad("site %q: not a DNS label", site)
	case h.ExportedAt.IsZero():
		bad("its header has no export time")
	default:
		return &h
	}
	return nil
}

// readReport reads and checks the report of layer l, the n-th.
func readReport(ctx context.Context, f content.Fetcher, l ocispec.Descriptor, n int, bad func(string, ...any)) (Report, bool) {
	var r Report
	if l.MediaType != api.MediaTypeTargetReport {
		bad("report %d is a %q, not a %q", n, l.MediaType, api.MediaTypeTargetReport)
		return r, false
	}
	if err := decodeBlob(ctx, f, l, Limits.Blob, &r); err != nil {
		bad("report %d: %v", n, err)
		return r, false
	}
	id := r.Metadata.Namespace + "/" + r.Metadata.Name
	switch {
	case r.APIVersion != api.APIVersion || r.Kind != api.KindTargetReport:
		bad("report %d, %s: a %s %s, not a TargetReport", n, id, r.APIVersion, r.Kind)
	case !validTarget(r.Metadata.Namespace, r.Metadata.Name):
		bad("report %d: %q is not a Target's namespace and name", n, id)
	default:
		r.Spec.Sort()
		return r, true
	}
	return r, false
}

// decodeBlob reads the blob d, of at most limit bytes, into v, strictly:
// one JSON document, no field v does not know.
func decodeBlob(ctx context.Context, f content.Fetcher, d ocispec.Descriptor, limit int64, v any) error {
	if d.Size > limit {
		return fmt.Errorf("%d bytes, more than the limit of %d", d.Size, limit)
	}
	b, err := content.FetchAll(ctx, f, d)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON document")
	}
	return nil
}
