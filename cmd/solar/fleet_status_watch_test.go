package main

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

// watching is a solar run in the background, as a terminal runs fleet
// status --watch: its output so far, and its exit code once interrupted.
type watching struct {
	stdout, stderr *testenv.LockedBuffer
	interrupt      context.CancelFunc
	code           chan int
}

func watch(t *testing.T, args ...string) *watching {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watching{stdout: &testenv.LockedBuffer{}, stderr: &testenv.LockedBuffer{}, interrupt: cancel, code: make(chan int, 1)}
	go func() { w.code <- run(ctx, args, strings.NewReader(""), w.stdout, w.stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.code:
		case <-time.After(10 * time.Second):
			t.Error("the watch did not end within 10s of its interrupt")
		}
	})
	return w
}

// waitFor polls stdout until ok holds, for at most 10 seconds; it fails the
// test with the output if the run ended before or the time ran out.
func (w *watching) waitFor(t *testing.T, what string, ok func(stdout string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(w.stdout.String()) {
		select {
		case code := <-w.code:
			w.code <- code
			require.Failf(t, "the watch ended", "exit %d before %s; stdout:\n%s\nstderr:\n%s", code, what, w.stdout, w.stderr)
		default:
		}
		if time.Now().After(deadline) {
			require.Failf(t, "timed out", "no %s within 10s; stdout:\n%s\nstderr:\n%s", what, w.stdout, w.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop interrupts the run, as Ctrl-C does, and returns its exit code.
func (w *watching) stop(t *testing.T) int {
	t.Helper()
	w.interrupt()
	select {
	case code := <-w.code:
		w.code <- code
		return code
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the watch did not end within 10s of its interrupt")
		return 0
	}
}

// report writes a device's state as its agent does (agentlink).
func report(put func(string, any), device, state, version string) {
	put("state."+device, wire.DeviceState{State: state, Version: version, At: time.Now().UTC().Format(time.RFC3339), Running: "1.3.0"})
}

// matches is a condition on stdout: re matches it.
func matches(re string) func(string) bool {
	return regexp.MustCompile(re).MatchString
}

// TestFleetStatusWatch: --watch prints the table, then a row each time a
// device reports, with no second header, until interrupted: a clean end,
// exit 0 from run (main makes it 130 or 143, as for every interrupted run).
// A device that appears later gets its row; other keys print nothing.
func TestFleetStatusWatch(t *testing.T) {
	ns, _, put := fleetBucket(t)
	put("attempt.dev-1", current("dev-1", "1.4.0"))
	report(put, "dev-1", "preparing", "1.4.0")

	w := watch(t, "fleet", "status", "--watch", "--nats", ns.URL)
	w.waitFor(t, "the table", matches(`^DEVICE +ATTEMPT .*\ndev-1 +0b8e2c3a-\S+ +1\.4\.0 +\d+s +preparing \(1\.4\.0\) +\d+s +-\n$`))
	put("uuid.0b8e2c3a-6a43-5b0e-9a51-3c2d1f0e4a77", "sha256:"+strings.Repeat("a", 64))
	report(put, "dev-1", "committed", "1.4.0")
	w.waitFor(t, "dev-1's new row", matches(`\ndev-1 +0b8e2c3a-\S+ +1\.4\.0 +\d+s +committed \(1\.4\.0\) +\d+s +-\n$`))
	report(put, "dev-2", "refused", "1.4.0")
	w.waitFor(t, "the row of a new device", matches(`\ndev-2 +- +- +- +refused \(1\.4\.0\) +\d+s +-\n$`))
	assert.Equal(t, 0, w.stop(t), w.stderr.String())
	assert.Empty(t, w.stderr.String())

	lines := strings.Split(strings.TrimSuffix(w.stdout.String(), "\n"), "\n")
	require.Len(t, lines, 4, "a header and three rows, nothing for uuid.*: %s", w.stdout)
	assert.Equal(t, 1, strings.Count(w.stdout.String(), "DEVICE"), "one header")
	col := strings.Index(lines[0], "STATE ")
	for i, state := range []string{"preparing", "committed", "refused"} {
		assert.Equal(t, col, strings.Index(lines[i+1], state), "the rows of changes are aligned with the table: %q", lines[i+1])
	}
}

// TestFleetStatusWatchNamed: with named devices, --watch prints theirs
// only; --no-headers drops the first table's header; -o json|yaml prints a
// stream of documents, one device each: the listing's, then the changes'.
// A named device the bucket does not know is named on stderr and watched:
// its first report prints it, and the interrupt still exits 0.
func TestFleetStatusWatchNamed(t *testing.T) {
	ns, _, put := fleetBucket(t)
	put("attempt.dev-1", current("dev-1", "1.4.0"))
	for _, format := range []string{"text", "json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			report(put, "dev-1", "preparing", "1.4.0")
			newDevice := "new-" + format
			w := watch(t, "fleet", "status", "dev-1", newDevice, "-w", "--no-headers", "--nats", ns.URL, "-o", format)
			w.waitFor(t, "the listing", func(s string) bool { return strings.Contains(s, "preparing") })
			report(put, "dev-2", "committed", "1.4.0")
			report(put, "dev-1", "committed", "1.4.0")
			w.waitFor(t, "dev-1's change", func(s string) bool { return strings.Contains(s, "committed") })
			report(put, newDevice, "committed", "1.4.0")
			w.waitFor(t, "the new device", func(s string) bool { return strings.Count(s, newDevice) == 1 })
			assert.Equal(t, 0, w.stop(t))
			assert.Equal(t, "solar: not found in the bucket solar-fleet: "+newDevice+
				" (1 of 2 devices: it holds no attempt for them and no state they reported; check the device ids and --bucket); watching them all the same\n", w.stderr.String())
			stdout := w.stdout.String()
			assert.NotContains(t, stdout, "dev-2", "not named")
			if format == "text" {
				assert.Regexp(t, `^dev-1 +\S+ +1\.4\.0 +\d+s +preparing \(1\.4\.0\) +\d+s +-\ndev-1 +\S+ +1\.4\.0 +\d+s +committed \(1\.4\.0\) +\d+s +-\n`+newDevice+` +- +- +- +committed \(1\.4\.0\) +\d+s +-\n$`, stdout)
				return
			}
			docs := documents(t, format, stdout)
			require.Len(t, docs, 3, stdout)
			for i, want := range []struct{ device, state string }{{"dev-1", "preparing"}, {"dev-1", "committed"}, {newDevice, "committed"}} {
				assert.Equal(t, want.device, docs[i].DeviceID, i)
				require.NotNil(t, docs[i].State, i)
				assert.Equal(t, want.state, docs[i].State.State, i)
			}
			assert.NotNil(t, docs[1].Current, "a change prints the device whole")
		})
	}
}

// documents decodes a stream of JSON documents, or of YAML documents
// separated by ---, each a device.
func documents(t *testing.T, format, stdout string) []fleet.Status {
	t.Helper()
	var docs []fleet.Status
	if format == "yaml" {
		for _, d := range strings.Split(stdout, "---\n") {
			var s fleet.Status
			require.NoError(t, yaml.Unmarshal([]byte(d), &s), d)
			docs = append(docs, s)
		}
		return docs
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	for {
		var s fleet.Status
		err := dec.Decode(&s)
		if err == io.EOF {
			return docs
		}
		require.NoError(t, err, stdout)
		docs = append(docs, s)
	}
}
