package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

// statusDoc is the document of fleet status -o json.
type statusDoc struct {
	Devices  []fleet.Status `json:"devices"`
	NotFound []string       `json:"notFound"`
}

// fleetBucket starts a nats-server with the bucket solar-fleet; put writes
// a value into it, a string as it is, anything else as JSON.
func fleetBucket(t *testing.T) (*testenv.NATS, jetstream.JetStream, func(key string, value any)) {
	t.Helper()
	ns := needNATS(t)
	_, js := ns.Connect(t)
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "solar-fleet"})
	require.NoError(t, err)
	return ns, js, func(key string, value any) {
		t.Helper()
		b, ok := value.(string)
		if !ok {
			j, err := json.Marshal(value)
			require.NoError(t, err)
			b = string(j)
		}
		_, err := kv.Put(context.Background(), key, []byte(b))
		require.NoError(t, err)
	}
}

func current(device, version string) wire.Current {
	return wire.Current{UUID: "0b8e2c3a-6a43-5b0e-9a51-3c2d1f0e4a77", Digest: "sha256:" + strings.Repeat("a", 64),
		Attempt: wire.Attempt{DeviceID: device, TargetVersion: version}}
}

// TestFleetStatusBadEntries: a malformed value, or a key written by hand
// whose id is no valid device id, is one bad row: the others print as usual,
// the bad ones are named on stderr, exit 1; -o json is one document with
// the errors per device.
func TestFleetStatusBadEntries(t *testing.T) {
	ns, js, put := fleetBucket(t)
	put("attempt.dev-1", current("dev-1", "1.4.0"))
	put("state.dev-1", wire.DeviceState{State: "committed", Version: "1.4.0"})
	put("state.dev-2", `{"state":`)
	put("attempt.dev-3", `[]`)
	put("state.a.b", wire.DeviceState{State: "committed"})
	_, err := js.Publish(context.Background(), "$KV.solar-fleet.state.\x1b[2J", []byte(`{"state":"committed"}`))
	require.NoError(t, err)
	status := func(args ...string) (int, string, string) {
		t.Helper()
		return solar(t, append([]string{"fleet", "status", "--nats", ns.URL}, args...)...)
	}

	code, stdout, stderr := status()
	assert.Equal(t, 1, code, stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, lines, 6, stdout)
	assert.Regexp(t, `^DEVICE +ATTEMPT +VERSION +ATTEMPT-AGE +STATE +STATE-AGE +REASON$`, lines[0])
	assert.Regexp(t, `^"\\x1b\[2J" +- +- +- +invalid +- +key "state\.\\x1b\[2J": invalid device id "\\x1b\[2J": want 1 to 64`, lines[1])
	assert.Regexp(t, `^a\.b +- +- +- +invalid +- +key "state\.a\.b": invalid device id "a\.b"`, lines[2])
	assert.Regexp(t, `^dev-1 +0b8e2c3a-\S+ +1\.4\.0 +\d+s +committed \(1\.4\.0\) +\d+s +-$`, lines[3], "a good row as usual")
	assert.Regexp(t, `^dev-2 +- +- +- +invalid +\d+s +state\.dev-2: not a device state: unexpected end of JSON input$`, lines[4])
	assert.Regexp(t, `^dev-3 +invalid +- +\d+s +- +- +attempt\.dev-3: not an attempt: json: cannot unmarshal array`, lines[5])
	assert.NotContains(t, stdout+stderr, "\x1b")
	assert.Contains(t, stderr, `could not read what the bucket solar-fleet holds about "\x1b[2J", a.b, dev-2, dev-3 (4 of 5 devices`)

	for _, format := range []string{"json", "yaml"} {
		code, stdout, stderr = status("-o", format)
		assert.Equal(t, 1, code, stderr)
		atMostOneDocument(t, format, stdout)
	}
	code, stdout, _ = status("-o", "json")
	assert.Equal(t, 1, code)
	assert.NotContains(t, stdout, "\x1b")
	var doc statusDoc
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Len(t, doc.Devices, 5)
	assert.Equal(t, "\x1b[2J", doc.Devices[0].DeviceID)
	assert.Contains(t, doc.Devices[0].StateError, "invalid device id")
	assert.False(t, doc.Devices[2].Bad())
	assert.Equal(t, "committed", doc.Devices[2].State.State)
	assert.Contains(t, doc.Devices[3].StateError, "state.dev-2: not a device state")
	assert.Contains(t, doc.Devices[4].AttemptError, "attempt.dev-3: not an attempt")
	assert.Empty(t, doc.NotFound)

	code, _, stderr = status("dev-1")
	assert.Equal(t, 0, code, "a good device named alone: %s", stderr)
	code, stdout, stderr = status("dev-2", "dev-9", "--no-headers")
	assert.Equal(t, 1, code)
	assert.Regexp(t, `^dev-2 +- +- +- +invalid `, stdout)
	assert.Contains(t, stderr, "holds about dev-2 (1 of 2 devices")
	assert.Contains(t, stderr, "not found in the bucket solar-fleet: dev-9 (1 of 2 devices")
}

// TestFleetStatusEscapes: what a device reports reaches the table with
// every character a terminal would act on escaped, one line per device;
// -o json has the strings as they are, escaped by JSON.
func TestFleetStatusEscapes(t *testing.T) {
	ns, _, put := fleetBucket(t)
	evil := wire.DeviceState{State: "rolled-back\x1b[2J", Step: "probe\nFAKE-DEVICE  ok", Version: "\x1b]0;pwned\x07",
		Reason: "timeout\r\x1b[31mall good\u202e\tend"}
	put("state.dev-1", evil)
	put("attempt.dev-1", current("dev-1", "1.5.0\x1b[8m"))
	put("state.dev-2", wire.DeviceState{State: "committed", Version: `"quoted"`, Reason: "plain \\x1b text"})

	code, stdout, stderr := solar(t, "fleet", "status", "--nats", ns.URL, "--no-headers")
	require.Equal(t, 0, code, stderr)
	for _, c := range "\x1b\x07\r\t\u202e" {
		assert.NotContains(t, stdout, string(c), "%q", c)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, lines, 2, "one line per device: %s", stdout)
	assert.Contains(t, lines[0], `"1.5.0\x1b[8m"`)
	assert.Contains(t, lines[0], `"rolled-back\x1b[2J" at "probe\nFAKE-DEVICE  ok" ("\x1b]0;pwned\a")`)
	assert.True(t, strings.HasSuffix(lines[0], ` "timeout\r\x1b[31mall good\u202e\tend"`), lines[0])
	assert.Regexp(t, ` committed \("\\"quoted\\""\) +\d+s +plain \\x1b text$`, lines[1], "printable strings as they are, but a leading quote is quoted")

	code, stdout, stderr = solar(t, "fleet", "status", "--nats", ns.URL, "-o", "json")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, "\x1b")
	var doc statusDoc
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Len(t, doc.Devices, 2)
	assert.Equal(t, evil, *doc.Devices[0].State, "whole, as reported")
	assert.Equal(t, "1.5.0\x1b[8m", doc.Devices[0].Current.Attempt.TargetVersion)
}

// TestFleetStatusReasonAndAge: the table shows the reason of a failed or
// refused state last (a long one cut with an ellipsis) and how old the
// attempt and the state are; -o json has the reason whole and both times as
// RFC 3339.
func TestFleetStatusReasonAndAge(t *testing.T) {
	ns, _, put := fleetBucket(t)
	now := time.Now().UTC().Truncate(time.Second)
	long := "the candidate agent did not become ready within 30s: " + strings.Repeat("connection refused; ", 10) + "END"
	before := time.Now().Add(-time.Second)
	put("attempt.dev-1", current("dev-1", "1.5.0"))
	put("state.dev-1", wire.DeviceState{State: "rolled-back", Step: "probe", Version: "1.5.0",
		Reason: "exit status 3", At: now.Add(-2*time.Hour - 10*time.Minute).Format(time.RFC3339)})
	put("state.dev-2", wire.DeviceState{State: "rollback-failed", Step: "start", Reason: long, At: now.Add(-3 * time.Minute).Format(time.RFC3339)})
	refusedAt := now.Add(-45 * time.Second)
	put("state.dev-3", wire.DeviceState{State: "refused", Reason: "notAfter has passed", At: refusedAt.Format(time.RFC3339)})
	put("state.dev-4", wire.DeviceState{State: "switching", Version: "1.5.0", At: now.Add(-4 * 24 * time.Hour).Format(time.RFC3339)})
	put("state.dev-5", wire.DeviceState{State: "committed", Version: "1.5.0"}) // no at: the entry's time
	after := time.Now().Add(time.Second)

	code, stdout, stderr := solar(t, "fleet", "status", "--nats", ns.URL)
	require.Equal(t, 0, code, stderr)
	// The age is whole seconds down: 45 at least, and at most what has
	// passed by now (a slow machine may take seconds to run the command).
	ages := []string{}
	for s := 45; s <= int(time.Since(refusedAt).Seconds()); s++ {
		ages = append(ages, strconv.Itoa(s))
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, lines, 6, stdout)
	assert.Regexp(t, `^DEVICE +ATTEMPT +VERSION +ATTEMPT-AGE +STATE +STATE-AGE +REASON$`, lines[0])
	assert.Regexp(t, `^dev-1 +0b8e2c3a-\S+ +1\.5\.0 +\d+s +rolled-back at probe \(1\.5\.0\) +2h +exit status 3$`, lines[1])
	assert.Regexp(t, `^dev-2 +- +- +- +rollback-failed at start +3m +the candidate agent did not become ready within 30s: connection refused; .*…$`, lines[2])
	reason := lines[2][strings.Index(lines[2], "the candidate"):]
	assert.Equal(t, 80, len([]rune(reason)), "cut at 80 characters: %q", reason)
	assert.Regexp(t, `^dev-3 +- +- +- +refused +(`+strings.Join(ages, "|")+`)s +notAfter has passed$`, lines[3])
	assert.Regexp(t, `^dev-4 +- +- +- +switching \(1\.5\.0\) +4d +-$`, lines[4], "a stale switching shows as old")
	assert.Regexp(t, `^dev-5 +- +- +- +committed \(1\.5\.0\) +\d+s +-$`, lines[5])

	code, stdout, stderr = solar(t, "fleet", "status", "--nats", ns.URL, "--no-headers")
	require.Equal(t, 0, code, stderr)
	rows := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, rows, 5, "the same rows without the header: %s", stdout)
	seconds := regexp.MustCompile(`\b\d+s\b`) // a second may pass between the two runs
	for i, row := range rows {
		assert.Equal(t, strings.Fields(seconds.ReplaceAllString(lines[i+1], "Ns")), strings.Fields(seconds.ReplaceAllString(row, "Ns")))
	}

	code, stdout, stderr = solar(t, "fleet", "status", "--nats", ns.URL, "-o", "json")
	require.Equal(t, 0, code, stderr)
	var raw struct {
		Devices []map[string]any `json:"devices"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &raw), stdout)
	require.Len(t, raw.Devices, 5)
	assert.Equal(t, now.Add(-2*time.Hour-10*time.Minute).Format(time.RFC3339), raw.Devices[0]["stateTime"])
	attemptTime, err := time.Parse(time.RFC3339, raw.Devices[0]["attemptTime"].(string))
	require.NoError(t, err, "RFC 3339")
	assert.WithinRange(t, attemptTime, before, after)
	assert.NotContains(t, raw.Devices[1], "attemptTime", "no attempt, no time")
	assert.Equal(t, long, raw.Devices[1]["state"].(map[string]any)["reason"], "whole")
	stateTime, err := time.Parse(time.RFC3339, raw.Devices[4]["stateTime"].(string))
	require.NoError(t, err)
	assert.WithinRange(t, stateTime, before, after, "no at: the entry's time")
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"dev-1":                    "dev-1",
		"exit status 3: not ready": "exit status 3: not ready",
		`back\slash`:               `back\slash`,
		"dév 设备":                   "dév 设备",
		"":                         `""`,
		`"quoted"`:                 `"\"quoted\""`,
		"\x1b[2J":                  `"\x1b[2J"`,
		"\x1b]0;pwned\x07":         `"\x1b]0;pwned\a"`,
		"a\nb":                     `"a\nb"`,
		"a\tb\r":                   `"a\tb\r"`,
		"a\x7f\u0085":              `"a\x7f\u0085"`,
		"rtl\u202eoverride":        `"rtl\u202eoverride"`,
		"bad \xff utf-8":           `"bad \xff utf-8"`,
	} {
		assert.Equal(t, want, printable(in), "%q", in)
	}
	assert.Equal(t, "abc", cut("abc", 3))
	assert.Equal(t, "ab…", cut("abcd", 3))
	assert.Equal(t, "dé…", cut("déjà", 3), "characters, not bytes")
}
