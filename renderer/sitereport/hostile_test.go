package sitereport

import (
	"archive/tar"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// signed writes art, signed with the site's key: an archive whose every
// byte the key vouches for, and whose content is hostile.
func signed(t *testing.T, art *publish.Artifact) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "reports.tar")
	_, err := write(context.Background(), art, "north", siteKey, out)
	require.NoError(t, err)
	return out
}

func header(t *testing.T, h Header) publish.Blob {
	t.Helper()
	b, err := json.Marshal(h)
	require.NoError(t, err)
	return publish.NewBlob(api.MediaTypeSiteReportsConfig, b)
}

func layer(s string) publish.Blob { return publish.NewBlob(api.MediaTypeTargetReport, []byte(s)) }

// TestHostileReports: an archive the site's key signed whose reports are
// not what export writes (another kind, a field a TargetReport lacks, a
// bad name, a Target twice, a count that lies, a report beyond the limit)
// is refused, every problem named at once, and nothing written.
func TestHostileReports(t *testing.T) {
	now := time.Now().UTC()
	secret := `{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"alpha","name":"token"},"spec":{}}`
	smuggled := `{"apiVersion":"solar.opendefense.cloud/v1alpha1","kind":"TargetReport","metadata":{"namespace":"alpha","name":"edge-1"},"spec":{},"data":{"token":"c2VjcmV0"}}`
	badName := `{"apiVersion":"solar.opendefense.cloud/v1alpha1","kind":"TargetReport","metadata":{"namespace":"../etc","name":"x"},"spec":{}}`
	good := `{"apiVersion":"solar.opendefense.cloud/v1alpha1","kind":"TargetReport","metadata":{"namespace":"alpha","name":"edge-2"},"spec":{"lastReportTime":null,"preflight":{}}}`
	art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports,
		Config: header(t, Header{Format: Format, Site: "north", ExportedAt: now, Reports: 9}),
		Layers: []publish.Blob{layer(secret), layer(smuggled), layer(badName), layer(good), layer(good + " ")}}
	into := filepath.Join(t.TempDir(), "reports")
	refused(t, signed(t, art), siteVerifier, into, "report 1, alpha/token: a v1 Secret, not a TargetReport")
	_, err := Import(context.Background(), signed(t, art), siteVerifier, into, now)
	msg := err.Error()
	for _, want := range []string{`report 2: json: unknown field "data"`, `report 3: "../etc/x" is not a Target's namespace and name`,
		"report 5: alpha/edge-2 is reported twice", "its header counts 9 reports, it holds 5"} {
		assert.Contains(t, msg, want)
	}

	t.Run("another site's header", func(t *testing.T) {
		art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports,
			Config: header(t, Header{Format: Format, Site: "south", ExportedAt: now})}
		refused(t, signed(t, art), siteVerifier, into, `its header names site "south", its repository solar-reports/north`)
	})
	t.Run("not a report archive", func(t *testing.T) {
		art := &publish.Artifact{Config: publish.NewBlob(api.MediaTypeHelmConfig, []byte(`{}`))}
		refused(t, signed(t, art), siteVerifier, into, "not a report archive")
	})
	t.Run("a report beyond the limit", func(t *testing.T) {
		big := layer(`{"apiVersion":"` + strings.Repeat("x", int(Limits.Blob)) + `"}`)
		art := &publish.Artifact{ArtifactType: api.ArtifactTypeSiteReports,
			Config: header(t, Header{Format: Format, Site: "north", ExportedAt: now, Reports: 1}), Layers: []publish.Blob{big}}
		file := signed(t, art)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		refused(t, file, siteVerifier, into, "more than the limit of 4194304")
		runtime.ReadMemStats(&after)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(Limits.Blob), "the report is refused by its size, not read")
	})
}

// TestHostileTar: what renderer/archive refuses in an archive of solar
// export (a link, another file) import-reports refuses too, before it
// verifies anything.
func TestHostileTar(t *testing.T) {
	file := exportAt(t, siteKey, time.Now())
	into := filepath.Join(t.TempDir(), "reports")
	for name, add := range map[string]entry{
		"a link":       {h: &tar.Header{Name: "blobs/sha256/" + strings.Repeat("0", 64), Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}},
		"another file": {h: &tar.Header{Name: "reports.json", Typeflag: tar.TypeReg, Mode: 0o600}, data: []byte("{}")},
	} {
		t.Run(name, func(t *testing.T) {
			refused(t, writeTar(t, append(readTar(t, file), add)), siteVerifier, into, "archive refused")
		})
	}
	t.Run("not a file", func(t *testing.T) {
		_, err := Import(context.Background(), t.TempDir(), siteVerifier, into, time.Now())
		require.Error(t, err)
		_, err = os.Stat(into)
		assert.True(t, os.IsNotExist(err), "nothing written")
	})
}
