package sitereport

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// siteKey and siteVerifier are the site's key, for tests that need but one.
var siteKey, siteVerifier = func() (*sign.Key, *sign.Verifier) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	k, err := sign.NewKey(priv)
	if err != nil {
		panic(err)
	}
	v, err := sign.NewVerifier(k.PublicPEM())
	if err != nil {
		panic(err)
	}
	return k, v
}()

func newKey(t *testing.T) (*sign.Key, *sign.Verifier) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	k, err := sign.NewKey(priv)
	require.NoError(t, err)
	v, err := sign.NewVerifier(k.PublicPEM())
	require.NoError(t, err)
	return k, v
}

// reports are two Targets' reports, the first with a Ready release.
func reports(at time.Time) []Report {
	spec := targetreport.Spec{LastReportTime: metav1.NewTime(at.Truncate(time.Second)), Releases: []targetreport.Release{
		{Name: "alpha-podinfo", Namespace: "flux-system", Phase: targetreport.Ready, Revision: "0.0.1"}}}
	return []Report{
		{APIVersion: api.APIVersion, Kind: api.KindTargetReport, Metadata: Metadata{Namespace: "alpha", Name: "edge-1"}, Spec: spec},
		{APIVersion: api.APIVersion, Kind: api.KindTargetReport, Metadata: Metadata{Namespace: "alpha", Name: "edge-2"}},
	}
}

// exportAt writes the site north's report archive, signed with k, dated at.
func exportAt(t *testing.T, k *sign.Key, at time.Time) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "reports.tar")
	s, err := Export(context.Background(), Contents{Reports: reports(at)}, "north", k, at, out)
	require.NoError(t, err)
	assert.Equal(t, []string{"alpha/edge-1", "alpha/edge-2"}, s.Targets)
	return out
}

// snapshot is every file under dir with its content: what an import wrote.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out
	}
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == lockName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// refused imports file into into, wants it refused with want in its
// message, and nothing written.
func refused(t *testing.T, file string, v *sign.Verifier, into, want string) {
	t.Helper()
	before := snapshot(t, into)
	_, err := Import(context.Background(), file, v, into, time.Now())
	require.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), want)
	assert.Equal(t, before, snapshot(t, into), "nothing written")
}

// TestImportRoundTrip: the reports exported are the reports Open reads,
// each marked with its site and when it left the site; the site's file is
// 0600.
func TestImportRoundTrip(t *testing.T) {
	k, v := newKey(t)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	file := exportAt(t, k, at)
	into := filepath.Join(t.TempDir(), "reports")
	imp, err := Import(context.Background(), file, v, into, at.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, "north", imp.Site)
	assert.True(t, at.Equal(imp.ExportedAt))
	info, err := os.Stat(filepath.Join(into, "north.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	rs, err := Open(into)
	require.NoError(t, err)
	assert.Equal(t, []string{"alpha/edge-1", "alpha/edge-2"}, rs.Targets())
	u, err := rs.Report(context.Background(), "alpha", "edge-1")
	require.NoError(t, err)
	assert.Equal(t, "north", u.GetAnnotations()[api.AnnotationReportSite])
	assert.Equal(t, "2026-12-01T10:00:00Z", u.GetAnnotations()[api.AnnotationReportExportedAt])
	spec := targetreport.Decode(u.Object)
	require.Len(t, spec.Releases, 1)
	assert.Equal(t, targetreport.Ready, spec.Releases[0].Phase)
	_, err = rs.Report(context.Background(), "alpha", "edge-3")
	assert.Contains(t, err.Error(), "not found")
}

// TestReplayRefused: once an archive is imported, the same archive again,
// or one the site exported before it, is refused and nothing written; a
// later one is imported.
func TestReplayRefused(t *testing.T) {
	k, v := newKey(t)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	older, newer, newest := exportAt(t, k, at), exportAt(t, k, at.Add(time.Minute)), exportAt(t, k, at.Add(2*time.Minute))
	into := filepath.Join(t.TempDir(), "reports")
	_, err := Import(context.Background(), newer, v, into, time.Now())
	require.NoError(t, err)
	refused(t, newer, v, into, "a replay: this archive of site north (exported at 2026-12-01T10:01:00Z) was imported already")
	refused(t, older, v, into, "a replay or an older archive: it was exported from site north at 2026-12-01T10:00:00Z, not after the last one imported (exported at 2026-12-01T10:01:00Z)")
	_, err = Import(context.Background(), newest, v, into, time.Now())
	require.NoError(t, err)
}

// TestOtherKeyRefused: an archive signed with another key than the site's
// is refused, and nothing written.
func TestOtherKeyRefused(t *testing.T) {
	other, _ := newKey(t)
	_, v := newKey(t)
	file := exportAt(t, other, time.Now())
	refused(t, file, v, filepath.Join(t.TempDir(), "reports"), "its signature: ")
}

type entry struct {
	h    *tar.Header
	data []byte
}

func readTar(t *testing.T, name string) []entry {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	tr := tar.NewReader(bytes.NewReader(b))
	var out []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, entry{h: h, data: data})
	}
}

func writeTar(t *testing.T, entries []entry) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := *e.h
		h.Size = int64(len(e.data))
		require.NoError(t, tw.WriteHeader(&h))
		_, err := tw.Write(e.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	name := filepath.Join(t.TempDir(), "tampered.tar")
	require.NoError(t, os.WriteFile(name, buf.Bytes(), 0o600))
	return name
}

// reportEntry is the index of the archive's blob that holds edge-1's report.
func reportEntry(t *testing.T, entries []entry) int {
	t.Helper()
	for i, e := range entries {
		if strings.HasPrefix(e.h.Name, "blobs/") && bytes.Contains(e.data, []byte(`"name":"edge-1"`)) {
			return i
		}
	}
	t.Fatal("no report of edge-1")
	return 0
}

// TestTamperedRefused: a byte of a report changed, an entry added or
// removed, each is refused naming what is wrong, and nothing written.
func TestTamperedRefused(t *testing.T) {
	k, v := newKey(t)
	file := exportAt(t, k, time.Now())
	into := filepath.Join(t.TempDir(), "reports")
	t.Run("byte flipped", func(t *testing.T) {
		entries := readTar(t, file)
		i := reportEntry(t, entries)
		entries[i].data = bytes.Replace(entries[i].data, []byte(`"Ready"`), []byte(`"Readz"`), 1)
		refused(t, writeTar(t, entries), v, into, "its content's sha256 is")
	})
	t.Run("entry added", func(t *testing.T) {
		entries := readTar(t, file)
		extra := []byte(`{"apiVersion":"solar.opendefense.cloud/v1alpha1","kind":"TargetReport","metadata":{"namespace":"alpha","name":"edge-9"},"spec":{}}`)
		sum := sha256hex(extra)
		entries = append(entries, entry{h: &tar.Header{Name: "blobs/sha256/" + sum, Typeflag: tar.TypeReg, Mode: 0o600}, data: extra})
		refused(t, writeTar(t, entries), v, into, "nothing names it")
	})
	t.Run("entry removed", func(t *testing.T) {
		entries := readTar(t, file)
		i := reportEntry(t, entries)
		entries = append(entries[:i], entries[i+1:]...)
		refused(t, writeTar(t, entries), v, into, "is missing from the archive")
	})
	t.Run("unchanged archive imports", func(t *testing.T) {
		_, err := Import(context.Background(), writeTar(t, readTar(t, file)), v, into, time.Now())
		require.NoError(t, err, "the rewriting itself changes nothing")
	})
}
