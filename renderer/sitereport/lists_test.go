package sitereport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/publish"
)

const siteRegistry = "registry.north.example/solar"

var (
	chartDigest = digest.FromString("chart")
	agentDigest = digest.FromString("agent")
)

func devices(at time.Time) []Device {
	return []Device{
		{ID: "dev-2", State: "rolled-back", Step: "switch", Version: "1.2.0", Reason: "health check failed", Running: "1.1.0", StateTime: at},
		{ID: "dev-1", Attempt: "7c3c1a0e-0000-4000-8000-000000000001", TargetVersion: "1.2.0", AttemptTime: at, State: "committed", Running: "1.2.0", StateTime: at},
	}
}

func pushed() []Pushed {
	return []Pushed{
		{Repository: siteRegistry + "/charts/podinfo", Tag: "6.5.0", Digest: chartDigest},
		{Repository: siteRegistry + "/fleet/agent", Tag: "1.2.0", Digest: agentDigest},
	}
}

// exportAll writes the site north's archive with reports, devices and
// tags (none when registry is ""), dated at.
func exportAll(t *testing.T, at time.Time, registry string) string {
	t.Helper()
	c := Contents{Reports: reports(at), Fleet: "solar-fleet", Devices: devices(at)}
	if registry != "" {
		c.Registry, c.Pushed = registry, pushed()
	}
	out := filepath.Join(t.TempDir(), "reports.tar")
	s, err := Export(context.Background(), c, "north", siteKey, at, out)
	require.NoError(t, err)
	assert.Equal(t, 2, s.Devices)
	return out
}

// TestDevicesAndPushedRoundTrip: the device states and tags exported are
// those imported, sorted; Open reads the devices with their site and
// export time; ReadConfirmed the tags. An archive that lists no registry
// keeps the last list (and its time); one that lists it replaces it.
func TestDevicesAndPushedRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	into := filepath.Join(t.TempDir(), "reports")
	imp, err := Import(context.Background(), exportAll(t, at, siteRegistry), siteVerifier, into, at.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, "solar-fleet", imp.Fleet)
	require.Len(t, imp.Devices, 2)
	assert.Equal(t, "dev-1", imp.Devices[0].ID, "sorted by id")
	assert.Equal(t, devices(at)[1], imp.Devices[0])
	assert.Equal(t, pushed(), imp.Pushed)

	rs, err := Open(into)
	require.NoError(t, err)
	ds := rs.Devices()
	require.Len(t, ds, 2)
	assert.Equal(t, "north", ds[1].Site)
	assert.True(t, at.Equal(ds[1].ExportedAt))
	assert.Equal(t, "rolled-back", ds[1].Status().State.State)

	c, err := ReadConfirmed(into, "north")
	require.NoError(t, err)
	assert.Equal(t, "north", c.Site())
	assert.True(t, at.Equal(c.ExportedAt()))
	assert.True(t, c.HasDigest(chartDigest.String()))
	assert.False(t, c.HasDigest(digest.FromString("other").String()))
	assert.Equal(t, agentDigest.String(), c.Tag(siteRegistry+"/fleet/agent", "1.2.0"))
	assert.Empty(t, c.Tag(siteRegistry+"/fleet/agent", "1.3.0"))

	later := at.Add(time.Hour)
	_, err = Import(context.Background(), exportAll(t, later, ""), siteVerifier, into, later)
	require.NoError(t, err)
	c, err = ReadConfirmed(into, "north")
	require.NoError(t, err)
	assert.True(t, at.Equal(c.ExportedAt()), "an archive without a list keeps the last list, with its time")
	assert.Equal(t, 2, c.Len())

	latest := later.Add(time.Hour)
	art := exportLists(t, latest, []Pushed{{Repository: siteRegistry + "/charts/podinfo", Tag: "6.5.1", Digest: agentDigest}})
	_, err = Import(context.Background(), art, siteVerifier, into, latest)
	require.NoError(t, err)
	c, err = ReadConfirmed(into, "north")
	require.NoError(t, err)
	assert.True(t, latest.Equal(c.ExportedAt()))
	assert.Equal(t, 1, c.Len(), "the newest list replaces the older")
	assert.False(t, c.HasDigest(chartDigest.String()))
}

func exportLists(t *testing.T, at time.Time, p []Pushed) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "reports.tar")
	_, err := Export(context.Background(), Contents{Registry: siteRegistry, Pushed: p}, "north", siteKey, at, out)
	require.NoError(t, err)
	return out
}

// TestReadConfirmedErrors: a site never imported, one whose archives listed
// no registry, and a name that is no site's are errors naming why.
func TestReadConfirmedErrors(t *testing.T) {
	into := filepath.Join(t.TempDir(), "reports")
	_, err := ReadConfirmed(into, "north")
	assert.ErrorContains(t, err, "no report archive of site north was imported into "+into)
	_, err = Import(context.Background(), exportAll(t, time.Now(), ""), siteVerifier, into, time.Now())
	require.NoError(t, err)
	_, err = ReadConfirmed(into, "north")
	assert.ErrorContains(t, err, "list nothing its registry holds: the site's solar export-reports ran without --registry")
	_, err = ReadConfirmed(into, "../north")
	assert.ErrorContains(t, err, "a site is named as a DNS label")
}

// TestNoDevicesSaysSo: an archive exported without the fleet's bucket has
// no device state, and its header says none were read.
func TestNoDevicesSaysSo(t *testing.T) {
	at := time.Now().UTC()
	out := filepath.Join(t.TempDir(), "reports.tar")
	s, err := Export(context.Background(), Contents{Reports: reports(at)}, "north", siteKey, at, out)
	require.NoError(t, err)
	assert.Empty(t, s.Fleet)
	imp, err := Import(context.Background(), out, siteVerifier, filepath.Join(t.TempDir(), "r"), at)
	require.NoError(t, err)
	assert.Empty(t, imp.Fleet, "no bucket read")
	assert.Empty(t, imp.Devices)
}

// TestExportRefusesBadLists: devices without their bucket, tags without
// their registry, a device twice, a tag of another registry or with a bad
// digest: Export refuses them all at once and writes nothing.
func TestExportRefusesBadLists(t *testing.T) {
	out := filepath.Join(t.TempDir(), "reports.tar")
	c := Contents{Devices: []Device{{ID: "dev-1"}, {ID: "dev-1"}}, Pushed: pushed()}
	_, err := Export(context.Background(), c, "north", siteKey, time.Now(), out)
	assert.ErrorContains(t, err, "device states without the fleet's bucket")
	assert.ErrorContains(t, err, "tags without the registry")
	assert.ErrorContains(t, err, "device 2: dev-1 is carried twice")
	c = Contents{Registry: "other.example", Pushed: []Pushed{{Repository: siteRegistry + "/a", Tag: "1", Digest: "sha256:abc"}}}
	_, err = Export(context.Background(), c, "north", siteKey, time.Now(), out)
	assert.ErrorContains(t, err, "is not under the registry other.example")
	assert.ErrorContains(t, err, `its digest "sha256:abc"`)
	assert.NoFileExists(t, out)
}

// TestDevicesOf: the devices the bucket knows, sorted, typed, their
// strings cut at their bounds; the attempt's artifact stays behind.
func TestDevicesOf(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cur := &wire.Current{UUID: "u-1", Digest: "sha256:x", Attempt: wire.Attempt{TargetVersion: "1.2.0",
		Artifact: wire.Artifact{URL: "https://user:secret@example/agent"}}}
	ds := DevicesOf([]fleet.Status{
		{DeviceID: "dev-b", State: &wire.DeviceState{State: "refused", Reason: strings.Repeat("é", maxText)}, StateTime: at},
		{DeviceID: "dev-a", Current: cur, AttemptTime: at},
		{DeviceID: "dev-unknown"},
	})
	require.Len(t, ds, 2)
	assert.Equal(t, Device{ID: "dev-a", Attempt: "u-1", TargetVersion: "1.2.0", AttemptTime: at}, ds[0])
	assert.Len(t, ds[1].Reason, maxText, "cut at the bound, on a rune")
	b, err := json.Marshal(ds)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "secret")
}

func listLayer(mt string, v any) publish.Blob {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return publish.NewBlob(mt, b)
}

// TestHostileLists: an archive the site's key signed whose device states
// and tags are not what export writes (an unknown field, a bad id, a bad
// digest, a reason over its bound, a device twice, a tag of another
// registry, counts that lie, a layer over its count) is refused, every
// problem named at once, and nothing written.
func TestHostileLists(t *testing.T) {
	now := time.Now().UTC()
	into := filepath.Join(t.TempDir(), "reports")
	h := Header{Format: Format, Site: "north", ExportedAt: now, Fleet: "solar-fleet", Devices: 9, Registry: siteRegistry, Pushed: 9}
	unknown := publish.NewBlob(api.MediaTypeSiteDevices, []byte(`[{"id":"dev-1","password":"x"}]`))
	art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports, Config: header(t, h), Layers: []publish.Blob{
		unknown,
		listLayer(api.MediaTypeSiteDevices, []Device{{ID: "dev/1"}, {ID: "dev-2", Reason: strings.Repeat("x", maxText+1)}, {ID: "dev-3"}, {ID: "dev-3"}}),
		listLayer(api.MediaTypeSitePushed, []Pushed{
			{Repository: siteRegistry + "/a", Tag: "1", Digest: "sha256:0000"},
			{Repository: "elsewhere.example/a", Tag: "1", Digest: chartDigest},
			{Repository: siteRegistry + "/a", Tag: "bad tag", Digest: chartDigest},
			{Repository: siteRegistry + "/b", Tag: "1", Digest: chartDigest},
			{Repository: siteRegistry + "/b", Tag: "1", Digest: chartDigest},
		}),
	}}
	refused(t, signed(t, art), siteVerifier, into, "device states: json: unknown field \"password\"")
	_, err := Import(context.Background(), signed(t, art), siteVerifier, into, now)
	for _, want := range []string{`device 1: invalid device id "dev/1"`, "device 2 (\"dev-2\"): its reason is 1025 bytes, more than the limit of 1024",
		"device 4: dev-3 is carried twice", `pushed 1 (` + siteRegistry + `/a:1): its digest "sha256:0000"`,
		"pushed 2: elsewhere.example/a is not under the registry " + siteRegistry,
		`pushed 3: "` + siteRegistry + `/a":"bad tag" is not a repository HOST/PATH and a tag`,
		"pushed 5: " + siteRegistry + "/b:1 is listed twice",
		"its header counts 9 device states, it holds 1", "its header counts 9 tags, it lists 1"} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestHostileListsBounds: a layer of more entries than its bound, more
// devices than the archive's, lists the header does not name, a v1 archive
// with lists, and another format are refused, nothing written.
func TestHostileListsBounds(t *testing.T) {
	now := time.Now().UTC()
	into := filepath.Join(t.TempDir(), "reports")
	t.Run("a layer over its count", func(t *testing.T) {
		many := make([]Device, layerItems+1)
		for i := range many {
			many[i].ID = fmt.Sprintf("dev-%d", i)
		}
		h := Header{Format: Format, Site: "north", ExportedAt: now, Fleet: "solar-fleet", Devices: len(many)}
		art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports, Config: header(t, h),
			Layers: []publish.Blob{listLayer(api.MediaTypeSiteDevices, many)}}
		refused(t, signed(t, art), siteVerifier, into, "layer 1 holds 1001 device states, more than the limit of 1000 a layer")
	})
	t.Run("more devices than the limit", func(t *testing.T) {
		h := Header{Format: Format, Site: "north", ExportedAt: now, Fleet: "solar-fleet", Devices: MaxDevices + 1}
		art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports, Config: header(t, h)}
		for i := 0; i <= MaxDevices; i += layerItems {
			part := make([]Device, min(layerItems, MaxDevices+1-i))
			for j := range part {
				part[j].ID = fmt.Sprintf("d%d", i+j)
			}
			art.Layers = append(art.Layers, listLayer(api.MediaTypeSiteDevices, part))
		}
		refused(t, signed(t, art), siteVerifier, into, "more than 100000 device states, the limit")
	})
	t.Run("devices without their bucket", func(t *testing.T) {
		h := Header{Format: Format, Site: "north", ExportedAt: now, Devices: 1}
		art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports, Config: header(t, h),
			Layers: []publish.Blob{listLayer(api.MediaTypeSiteDevices, []Device{{ID: "dev-1"}})}}
		refused(t, signed(t, art), siteVerifier, into, "it carries device states but its header names no fleet")
	})
	t.Run("a v1 archive with lists", func(t *testing.T) {
		h := Header{Format: formatV1, Site: "north", ExportedAt: now}
		art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports, Config: header(t, h),
			Layers: []publish.Blob{listLayer(api.MediaTypeSitePushed, pushed())}}
		refused(t, signed(t, art), siteVerifier, into, `report 1 is a "`+api.MediaTypeSitePushed+`"`)
	})
	t.Run("another format", func(t *testing.T) {
		h := Header{Format: "solar-site-reports/v9", Site: "north", ExportedAt: now}
		art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports, Config: header(t, h)}
		refused(t, signed(t, art), siteVerifier, into, `its header is of format "solar-site-reports/v9"; this solar reads "solar-site-reports/v2" and "solar-site-reports/v1"`)
	})
}

// TestV1ArchiveImports: an archive of format v1 (reports only, before
// device states and tags) is still imported.
func TestV1ArchiveImports(t *testing.T) {
	now := time.Now().UTC()
	good := `{"apiVersion":"solar.opendefense.cloud/v1alpha1","kind":"TargetReport","metadata":{"namespace":"alpha","name":"edge-2"},"spec":{}}`
	art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports,
		Config: header(t, Header{Format: formatV1, Site: "north", ExportedAt: now, Reports: 1}), Layers: []publish.Blob{layer(good)}}
	imp, err := Import(context.Background(), signed(t, art), siteVerifier, filepath.Join(t.TempDir(), "r"), now)
	require.NoError(t, err)
	assert.Len(t, imp.Reports, 1)
	assert.Empty(t, imp.Devices)
}

// TestTamperedListsRefused: a byte of a device state or of a tag's digest
// changed is refused (the signature covers them), nothing written.
func TestTamperedListsRefused(t *testing.T) {
	file := exportAll(t, time.Now(), siteRegistry)
	into := filepath.Join(t.TempDir(), "reports")
	for name, c := range map[string]struct{ find, with string }{
		"device state":  {`"state":"rolled-back"`, `"state":"committed"`},
		"pushed digest": {chartDigest.Encoded(), agentDigest.Encoded()},
	} {
		t.Run(name, func(t *testing.T) {
			entries := readTar(t, file)
			found := false
			for i, e := range entries {
				if strings.HasPrefix(e.h.Name, "blobs/") && bytes.Contains(e.data, []byte(c.find)) && bytes.HasPrefix(e.data, []byte("[")) {
					entries[i].data = bytes.Replace(e.data, []byte(c.find), []byte(c.with), 1)
					found = true
				}
			}
			require.True(t, found)
			refused(t, writeTar(t, entries), siteVerifier, into, "its content's sha256 is")
		})
	}
}

// TestEmptyArchiveImports: an archive of a site with no report, no device
// state read and no registry listed imports (its one layer is OCI's empty
// descriptor, not a report).
func TestEmptyArchiveImports(t *testing.T) {
	out := filepath.Join(t.TempDir(), "reports.tar")
	_, err := Export(context.Background(), Contents{}, "north", siteKey, time.Now(), out)
	require.NoError(t, err)
	imp, err := Import(context.Background(), out, siteVerifier, filepath.Join(t.TempDir(), "r"), time.Now())
	require.NoError(t, err)
	assert.Empty(t, imp.Reports)
}
