package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

func needNATS(t *testing.T) *testenv.NATS {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test runs a real nats-server")
	}
	return testenv.StartNATS(t)
}

// atMostOneDocument fails unless stdout is empty or exactly one document of
// the format (json or yaml).
func atMostOneDocument(t *testing.T, format, stdout string) {
	t.Helper()
	if stdout == "" || format == "text" {
		return
	}
	if format == "yaml" {
		var v any
		require.NoError(t, yaml.Unmarshal([]byte(stdout), &v), stdout)
		assert.NotContains(t, "\n"+stdout, "\n---", "one YAML document")
		return
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	var v any
	require.NoError(t, dec.Decode(&v), stdout)
	assert.ErrorIs(t, dec.Decode(&v), io.EOF, "one JSON document: %s", stdout)
}

// TestFleetStatusMissingBucket: status (and repair) of a bucket that does not
// exist, a mistyped --bucket, fail with exit 1 and say so, naming the bucket
// and the flag, in every output format; nothing creates the bucket.
func TestFleetStatusMissingBucket(t *testing.T) {
	ns := needNATS(t)
	for _, c := range []struct {
		output string
		args   []string
	}{
		{"text", []string{"fleet", "status"}},
		{"json", []string{"fleet", "status"}},
		{"yaml", []string{"fleet", "status"}},
		{"text", []string{"fleet", "status", "dev-1"}},
		{"json", []string{"fleet", "status", "dev-1"}},
		{"text", []string{"fleet", "repair", "dev-1", "--reason", "reflashed"}},
	} {
		args := append(c.args, "--bucket", "typo", "--nats", ns.URL, "-o", c.output)
		code, stdout, stderr := solar(t, args...)
		assert.Equal(t, 1, code, "%v: %s%s", args, stdout, stderr)
		assert.Contains(t, stderr, `bucket "typo" does not exist`, args)
		assert.Contains(t, stderr, "--bucket", args)
		if c.output == "text" {
			assert.Empty(t, stdout, args)
		}
		atMostOneDocument(t, c.output, stdout)
	}
	_, js := ns.Connect(t)
	_, err := js.KeyValue(context.Background(), "typo")
	assert.ErrorIs(t, err, jetstream.ErrBucketNotFound, "status does not create the bucket")
	streams := js.StreamNames(context.Background())
	var names []string
	for n := range streams.Name() {
		names = append(names, n)
	}
	require.NoError(t, streams.Err())
	assert.Empty(t, names, "no stream at all was created")
}

// TestFleetStatusUnknownDevices: status of named devices prints the rows of
// those the bucket knows (an attempt or a reported state) and fails with
// exit 1 naming the others on stderr; in JSON and YAML they are listed under
// notFound. Devices that are all known, or no names, exit 0.
func TestFleetStatusUnknownDevices(t *testing.T) {
	ns := needNATS(t)
	ctx := context.Background()
	_, js := ns.Connect(t)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "solar-fleet"})
	require.NoError(t, err)
	cur, err := json.Marshal(wire.Current{UUID: "0b8e2c3a-6a43-5b0e-9a51-3c2d1f0e4a77", Digest: "sha256:" + strings.Repeat("a", 64),
		Attempt: wire.Attempt{DeviceID: "dev-1", TargetVersion: "1.4.0"}})
	require.NoError(t, err)
	_, err = kv.Put(ctx, "attempt.dev-1", cur)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "state.dev-2", []byte(`{"state":"committed","version":"1.4.0"}`))
	require.NoError(t, err)
	status := func(args ...string) (int, string, string) {
		t.Helper()
		return solar(t, append([]string{"fleet", "status", "--nats", ns.URL}, args...)...)
	}

	code, stdout, stderr := status("dev-1", "NO-SUCH-DEVICE", "dev-2", "other-1", "--no-headers")
	assert.Equal(t, 1, code, stderr)
	assert.Regexp(t, `^dev-1 +0b8e2c3a-\S+ +1\.4\.0 +[0-9]+s +- +- +-\ndev-2 +- +- +- +committed \(1\.4\.0\) +[0-9]+s +-\n$`, stdout, "the rows of the devices found")
	assert.Contains(t, stderr, "not found in the bucket solar-fleet: NO-SUCH-DEVICE, other-1")
	assert.NotContains(t, stderr, "dev-1")
	assert.NotContains(t, stderr, "dev-2")

	for _, format := range []string{"json", "yaml"} {
		code, stdout, stderr = status("dev-1", "NO-SUCH-DEVICE", "dev-2", "other-1", "-o", format)
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, "NO-SUCH-DEVICE, other-1")
		atMostOneDocument(t, format, stdout)
		var doc struct {
			Devices  []fleet.Status `json:"devices"`
			NotFound []string       `json:"notFound"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(stdout), &doc), stdout)
		require.Len(t, doc.Devices, 2, stdout)
		assert.Equal(t, "dev-1", doc.Devices[0].DeviceID)
		assert.Equal(t, "dev-2", doc.Devices[1].DeviceID)
		assert.Equal(t, []string{"NO-SUCH-DEVICE", "other-1"}, doc.NotFound)
	}

	code, stdout, stderr = status("NO-SUCH-DEVICE")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "NO-SUCH-DEVICE")

	for _, args := range [][]string{{"dev-2", "dev-1"}, {}} {
		code, stdout, stderr = status(args...)
		assert.Equal(t, 0, code, "%v: %s", args, stderr)
		assert.Empty(t, stderr, args)
		assert.Equal(t, 3, strings.Count(stdout, "\n"), "%v: a header and two rows: %s", args, stdout)
	}
	code, stdout, _ = status("-o", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, `"notFound": []`, "always a list")
}
