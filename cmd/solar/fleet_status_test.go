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

	"github.com/solar-pipeline/solar/internal/testenv"
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
