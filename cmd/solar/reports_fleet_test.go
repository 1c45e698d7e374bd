package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/sitereport"
)

// TestReportArchiveDevicesAndPushed: with a real NATS and a real registry,
// export-reports carries the fleet's device states and every tag of the
// site's registry under its prefix (not those beside it) with its
// manifest's digest; import-reports keeps them and says how many;
// fleet status --reports shows the devices marked with the archive they
// came through; ReadConfirmed has the chart's digest. A later archive
// without --nats and --registry carries no devices and says so, and keeps
// the site's list.
func TestReportArchiveDevicesAndPushed(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd, kube-apiserver, nats-server and registry")
	}
	t.Setenv("NATS_URL", "")
	site := testenv.StartAPIServer(t)
	ns := testenv.StartNATS(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true})
	chart := pushAppChart(t, reg.Host, "north/charts", "podinfo", "6.7.0", "6.7.0")
	pushAppChart(t, reg.Host, "south/charts", "podinfo", "6.8.0", "6.8.0")

	ctx := context.Background()
	_, js := ns.Connect(t)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "solar-fleet"})
	require.NoError(t, err)
	cur, err := json.Marshal(wire.Current{UUID: "0b8e2c3a-6a43-5b0e-9a51-3c2d1f0e4a77", Digest: "sha256:" + strings.Repeat("a", 64),
		Attempt: wire.Attempt{DeviceID: "dev-1", TargetVersion: "1.4.0", Artifact: wire.Artifact{URL: "https://agent.example/s3cr3t"}}})
	require.NoError(t, err)
	_, err = kv.Put(ctx, "attempt.dev-1", cur)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "state.dev-2", []byte(`{"state":"rolled-back","step":"switch","version":"1.4.0","reason":"health check failed","running":"1.3.0"}`))
	require.NoError(t, err)

	dir := t.TempDir()
	key, pub := writeKey(t, dir, "site")
	archive, into := filepath.Join(dir, "reports.tar"), filepath.Join(dir, "reports")
	code, _, stderr := solar(t, "export-reports", "--site", "north", "--signing-key", key, "--out", archive, "--kubeconfig", site.Kubeconfig,
		"--nats", ns.URL, "--registry", reg.Host+"/north", "--plain-http")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "0 reports, 2 device states of bucket solar-fleet, 1 tag of "+reg.Host+"/north of site north")
	carried, err := os.ReadFile(archive)
	require.NoError(t, err)
	assert.NotContains(t, string(carried), "s3cr3t", "an attempt's artifact stays on the site")

	code, _, stderr = solar(t, "import-reports", archive, "--key", pub, "--into", into)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "imported 0 reports, 2 device states of bucket solar-fleet, 1 tag of "+reg.Host+"/north of site north")

	c, err := sitereport.ReadConfirmed(into, "north")
	require.NoError(t, err)
	assert.True(t, c.HasDigest(chart))
	assert.Equal(t, chart, c.Tag(reg.Host+"/north/charts/podinfo", "6.7.0"))
	assert.Equal(t, 1, c.Len(), "south's chart is not under the prefix")

	code, stdout, stderr := solar(t, "fleet", "status", "--reports", into)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 3, stdout)
	assert.Regexp(t, `^DEVICE +ATTEMPT +VERSION +ATTEMPT-AGE +STATE +STATE-AGE +REASON +VIA$`, lines[0])
	assert.Regexp(t, `^dev-1 +0b8e2c3a-\S+ +1\.4\.0 +[0-9]+s +- +- +- +the archive of site north, exported at \S+Z$`, lines[1])
	assert.Regexp(t, `^dev-2 +- +- +- +rolled-back at switch \(1\.4\.0\) +[0-9]+s +health check failed +the archive of site north, exported at `, lines[2])
	code, stdout, stderr = solar(t, "fleet", "status", "--reports", into, "dev-2", "dev-9", "-o", "json")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not found in the device states imported into "+into+": dev-9")
	var doc struct {
		Devices []sitereport.SiteDevice `json:"devices"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Len(t, doc.Devices, 1)
	assert.Equal(t, "north", doc.Devices[0].Site)
	assert.Equal(t, "1.3.0", doc.Devices[0].Running)

	later := filepath.Join(dir, "later.tar")
	code, _, stderr = solar(t, "export-reports", "--site", "north", "--signing-key", key, "--out", later, "--kubeconfig", site.Kubeconfig)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "no --nats (nor $NATS_URL): the archive carries no device states")
	code, _, stderr = solar(t, "import-reports", later, "--key", pub, "--into", into)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "no device states (the site's fleet was not read: no --nats), 1 tag of "+reg.Host+"/north (kept: listed by the archive exported at ")
	c, err = sitereport.ReadConfirmed(into, "north")
	require.NoError(t, err)
	assert.True(t, c.HasDigest(chart), "the list is kept")
	code, stdout, _ = solar(t, "fleet", "status", "--reports", into)
	assert.Equal(t, 0, code)
	assert.Empty(t, stdout, "the newest archive's devices: none")
}

// TestExportReportsNoCatalog: a registry that does not serve the catalog
// API is an error naming it and the API; nothing is written.
func TestExportReportsNoCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real etcd and kube-apiserver")
	}
	t.Setenv("NATS_URL", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":[{"code":"UNSUPPORTED","message":"the catalog is off"}]}`))
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	site := testenv.StartAPIServer(t)
	dir := t.TempDir()
	key, _ := writeKey(t, dir, "site")
	out := filepath.Join(dir, "reports.tar")
	code, _, stderr := solar(t, "export-reports", "--site", "north", "--signing-key", key, "--out", out, "--kubeconfig", site.Kubeconfig,
		"--registry", host+"/north", "--plain-http")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "the registry "+host+"/north does not serve the catalog API (GET /v2/_catalog answered 404)")
	assert.NoFileExists(t, out)
}
