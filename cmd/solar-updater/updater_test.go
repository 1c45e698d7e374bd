package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// killPoints are the moments of an attempt a kill lands at: each side of
// every journal write and between the side effects (internal/killpoint).
var killPoints = []string{
	"journal-before-preparing", "journal-after-preparing", "prepare-downloaded", "prepare-installed",
	"journal-before-prepared", "journal-after-prepared", "journal-before-stopping", "journal-after-stopping",
	"transaction-stopped", "journal-before-selected", "journal-after-selected", "transaction-selected",
	"journal-before-starting", "journal-after-starting", "supervisor-started", "transaction-started", "journal-before-committed",
	"journal-after-committed",
}

// TestKillMatrix kills the updater with SIGKILL at every point of an
// attempt (and of a rollback; supervisor-started is between starting an
// agent and anything else), once (then it runs clean) or on every run, restarting it and
// sending the attempt again, as the agent does, until it gives a final
// outcome (at most 6 runs). In every case the selected binary is v1 or v2,
// whole, exactly one agent runs, and the outcome is the expected one.
func TestKillMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 41 cases of updater processes killed")
	}
	server := startArtifactServer(t)
	matrix := killMatrix()
	require.GreaterOrEqual(t, len(matrix), 30)
	for _, tc := range matrix {
		name := tc.point + map[bool]string{false: "/once", true: "/every"}[tc.every]
		t.Run(name, func(t *testing.T) {
			d := newDevice(t, server, nil)
			a := server.attempt(t, builds[tc.candidate], "2.0.0", "blobs")
			var final wire.Outcome
			kills := 0
			for run := 0; run < 6; run++ {
				point := ""
				if tc.every || run == 0 {
					point = tc.point
				}
				o, ok := d.run(t, point, a)
				if !ok {
					kills++
					// After every kill: the old or the new binary, whole.
					selected(t, d.paths, builds)
					continue
				}
				final = o
				break
			}
			assert.Positive(t, kills, "the kill point was reached")
			assert.Equal(t, tc.want, final.State, "final outcome (%s)", final.Reason)
			assert.Equal(t, tc.build, selected(t, d.paths, builds))
			assert.Equal(t, tc.build, running(t, d.paths, builds))
			staging, _ := filepath.Glob(filepath.Join(d.paths.Versions(), ".staging-*"))
			assert.Empty(t, staging, "no partial download is left")
		})
	}
}

// killRow is a case of the kill matrix.
type killRow struct {
	point string
	every bool
	want  string // the final outcome; "" none (the updater never gets past the point)
	build string // the build selected and running at the end
	// candidate is the build the attempt installs: v2, or one that never
	// gets ready, to kill the rollback.
	candidate string
}

// killMatrix is every kill point, once and on every run, with the outcome
// and build each must end with.
func killMatrix() []killRow {
	type row = killRow
	var matrix []row
	switching := false // the points after the journal says stopping
	for _, p := range killPoints {
		switching = switching || p == "journal-after-stopping"
		switch {
		case p == "supervisor-started":
			// The candidate started and nothing recorded it: the restart
			// finds it by what it runs and stops it before v1 starts.
			// Killed on every run, the rollback's own start is cut too:
			// no outcome, v1 selected and running, alone.
			matrix = append(matrix, row{p, false, wire.PhaseRolledBack, "v1", ""}, row{p, true, "", "v1", ""})
		case p == "journal-after-committed":
			// Committed: a restart keeps it, the attempt again says so.
			matrix = append(matrix, row{p, false, wire.PhaseCommitted, "v2", ""}, row{p, true, wire.PhaseCommitted, "v2", ""})
		case switching:
			// A switch cut before commit resolves to the previous binary,
			// reported rolled-back ("interrupted"), and is not retried.
			matrix = append(matrix, row{p, false, wire.PhaseRolledBack, "v1", ""}, row{p, true, wire.PhaseRolledBack, "v1", ""})
		case p == "journal-before-preparing":
			// Killed before anything is written, every time: nothing
			// happens, the old agent runs on.
			matrix = append(matrix, row{p, false, wire.PhaseCommitted, "v2", ""}, row{p, true, "", "v1", ""})
		case p == "prepare-installed":
			// The next try finds the binary installed and checks it again.
			matrix = append(matrix, row{p, false, wire.PhaseCommitted, "v2", ""}, row{p, true, wire.PhaseCommitted, "v2", ""})
		default:
			// A prepare cut is dropped and the attempt comes again, until
			// the cap on tries per digest refuses it.
			matrix = append(matrix, row{p, false, wire.PhaseCommitted, "v2", ""}, row{p, true, wire.StateRefused, "v1", ""})
		}
	}
	for i := range matrix {
		matrix[i].candidate = "v2"
	}
	// The rollback of a candidate that never gets ready, killed once at
	// each of its points: the restart finishes it.
	for _, p := range []string{"journal-before-rolling-back", "journal-after-rolling-back", "rollback-stopped", "journal-before-rolled-back", "journal-after-rolled-back"} {
		matrix = append(matrix, row{p, false, wire.PhaseRolledBack, "v1", "v2-never-ready"})
	}
	return matrix
}

// TestErrorMatrix fails each step of an attempt in turn: the previous binary
// stays selected and running, the outcome names the step, partial files are
// removed, and the same attempt is not tried again. Another attempt of the
// digest is refused after a failure of the candidate's own (its content, its
// start, its readiness); after a failed stop or a full disk (not the
// candidate's fault) it is tried again. A download that fails for a
// transport reason (a 404) is retried until the attempt's notAfter.
func TestErrorMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs updater and agent processes")
	}
	// The updater's stop and start are made to fail with SOLAR_FAILPOINT.
	server := startArtifactServer(t)
	for _, tc := range []struct {
		name, build, version, path string
		wrap                       []string // runs the updater under this command
		failpoint                  string
		step                       string
		retried                    bool // another attempt of the digest is tried (and, the cause gone, commits)
	}{
		{"digest", "v2", "2.0.0", "bad/other", nil, "", "digest", false},
		{"oversized", "v2", "2.0.0", "bad/oversized", nil, "", "size", false},
		{"truncated", "v2", "2.0.0", "bad/truncated", nil, "", "size", false},
		{"disk full", "v2", "2.0.0", "blobs", []string{"prlimit", "--fsize=200000"}, "", "install", true},
		{"probe", "v2-probe-fails", "2.0.0", "blobs", nil, "", "probe", false},
		{"stop", "v2", "2.0.0", "blobs", nil, "service-stop", "stop", false},    // the first stop fails
		{"start", "v2", "2.0.0", "blobs", nil, "service-start", "start", false}, // the candidate's start fails
		{"never ready", "v2-never-ready", "2.0.0", "blobs", nil, "", "readiness", false},
		{"crash at start", "v2-crash-at-start", "2.0.0", "blobs", nil, "", "readiness", false},
		{"other version", "v2-wrong-version", "2.0.0", "blobs", nil, "", "readiness", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDevice(t, server, nil)
			d.failpoint = tc.failpoint
			if tc.wrap != nil {
				wrapper := filepath.Join(t.TempDir(), "wrapped")
				script := "#!/bin/sh\nexec " + strings.Join(tc.wrap, " ") + " " + d.bin + " \"$@\"\n"
				require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
				d.bin = wrapper
			}
			a := server.attempt(t, builds[tc.build], tc.version, tc.path)
			o, ok := d.run(t, "", a)
			require.True(t, ok)
			assert.Equal(t, wire.PhaseRolledBack, o.State, o.Reason)
			assert.Equal(t, tc.step, o.Step, o.Reason)
			assert.Equal(t, "v1", selected(t, d.paths, builds))
			assert.Equal(t, "v1", running(t, d.paths, builds))
			staging, _ := filepath.Glob(filepath.Join(d.paths.Versions(), ".staging-*"))
			assert.Empty(t, staging, "partial files are removed")
			again, ok := d.run(t, "", a)
			require.True(t, ok)
			assert.Equal(t, o.State+" "+o.Step, again.State+" "+again.Step, "the same attempt again: its outcome again")
			other := a
			other.NotAfter = "2099-01-01T00:00:00Z"
			other, err := other.Seal()
			require.NoError(t, err)
			if tc.retried {
				d.bin = updaterBin // the disk has room again
				again, ok = d.run(t, "", other)
				require.True(t, ok)
				assert.Equal(t, wire.PhaseCommitted, again.State, "another attempt of the digest is tried: %s", again.Reason)
				assert.Equal(t, "v2", running(t, d.paths, builds))
				return
			}
			again, ok = d.run(t, "", other)
			require.True(t, ok)
			if tc.step == "stop" {
				// Not the candidate's fault: the digest is tried again.
				assert.Equal(t, o.State+" "+o.Step, again.State+" "+again.Step, "another attempt of the digest is tried again")
				return
			}
			assert.Equal(t, wire.StateRefused, again.State, "another attempt of a digest that failed is not tried")
			assert.Contains(t, again.Reason, "failed before")
		})
	}

	t.Run("download (404) until notAfter", func(t *testing.T) {
		d := newDevice(t, server, nil, fastRetries...)
		a := server.attempt(t, builds["v2"], "2.0.0", "missing")
		// Time to start the updater on a slow machine, and to retry.
		a.NotAfter = time.Now().Add(6 * time.Second).UTC().Format(time.RFC3339)
		a, err := a.Seal()
		require.NoError(t, err)
		var seen outcomes
		o, ok := d.runSeeing(t, "", a, seen.add, new(bytes.Buffer))
		require.True(t, ok)
		assert.Equal(t, wire.StateRefused, o.State, "the 404 is retried until notAfter, then refused")
		assert.Contains(t, o.Reason, "expired while retrying: GET "+server.URL+"/missing/")
		assert.Contains(t, o.Reason, "404 Not Found")
		assert.NotEmpty(t, seen.of(wire.StateDownloadRetrying))
		assert.Equal(t, "v1", running(t, d.paths, builds))
		assert.Empty(t, journalOf(t, d.paths).Failed, "a 404 is not the artifact's fault")
		again, ok := d.run(t, "", a)
		require.True(t, ok)
		assert.Equal(t, wire.StateRefused, again.State)
		assert.Contains(t, again.Reason, "expired", "the same attempt again: expired, not failed before")
		// The blob is there now (the operator pushed it; here, another URL):
		// another attempt of the digest is tried and commits.
		again, ok = d.run(t, "", server.attempt(t, builds["v2"], "2.0.0", "blobs"))
		require.True(t, ok)
		assert.Equal(t, wire.PhaseCommitted, again.State, again.Reason)
		assert.Equal(t, "v2", running(t, d.paths, builds))
	})
}

// TestCrashAfterCommit: an agent that reports ready and crashes later is
// committed: no protocol rollback after commit.
func TestCrashAfterCommit(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	o, ok := d.run(t, "", server.attempt(t, builds["v2-crash-after-commit"], "2.0.0", "blobs"))
	require.True(t, ok)
	assert.Equal(t, wire.PhaseCommitted, o.State, "ready is committed at once")
	assert.Equal(t, "v2-crash-after-commit", selected(t, d.paths, builds), "no protocol rollback after commit")
}

// TestRollbackFailedBlocks: a rollback that cannot start the previous binary
// is rollback-failed; every attempt is refused until --repair, the failed
// one is answered with its outcome again, and the next commits.
func TestRollbackFailedBlocks(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	// The previous binary is gone: the rollback cannot start it.
	target, err := os.Readlink(d.paths.Current())
	require.NoError(t, err)
	require.NoError(t, os.Remove(target))
	failed := server.attempt(t, builds["v2-never-ready"], "2.0.0", "blobs")
	o, ok := d.run(t, "", failed)
	require.True(t, ok)
	assert.Equal(t, wire.PhaseRollbackFailed, o.State, o.Reason)
	assert.Equal(t, "readiness", o.Step)
	good := server.attempt(t, builds["v2"], "2.0.0", "blobs")
	o, ok = d.run(t, "", good)
	require.True(t, ok)
	assert.Equal(t, wire.StateRefused, o.State, "blocked until repaired")
	assert.Contains(t, o.Reason, "rollback-failed")

	out, err := exec.Command(d.bin, "--root", d.paths.Root, "--repair", "v1 reinstalled by hand").CombinedOutput()
	require.NoError(t, err, "%s", out)
	o, ok = d.run(t, "", failed)
	require.True(t, ok)
	assert.Equal(t, wire.PhaseRollbackFailed, o.State, "the failed attempt again: its outcome, for the agent to publish")
	o, ok = d.run(t, "", good)
	require.True(t, ok)
	assert.Equal(t, wire.PhaseCommitted, o.State, o.Reason)
	assert.Equal(t, "v2", running(t, d.paths, builds))
}

// TestTriesCap: --max-tries N begins an attempt of a digest exactly N times,
// kills included; the next is refused.
func TestTriesCap(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil, "--max-tries", "2")
	a := server.attempt(t, builds["v2"], "2.0.0", "blobs")
	kills := 0
	for run := 0; run < 5; run++ {
		o, ok := d.run(t, "journal-after-preparing", a)
		if !ok {
			kills++
			continue
		}
		assert.Equal(t, wire.StateRefused, o.State)
		assert.Contains(t, o.Reason, "tried 2 times")
		break
	}
	assert.Equal(t, 2, kills, "tries begun before the refusal")
}

// TestRollbackWaitsForReadiness: the rollback counts only once the previous
// agent reports ready; one that never does is rollback-failed, not
// rolled-back.
func TestRollbackWaitsForReadiness(t *testing.T) {
	server := startArtifactServer(t)
	d := newDeviceWith(t, server, deviceOptions{first: "v1-never-ready"})
	o, ok := d.run(t, "", server.attempt(t, builds["v2-never-ready"], "2.0.0", "blobs"))
	require.True(t, ok)
	assert.Equal(t, wire.PhaseRollbackFailed, o.State, o.Reason)
	assert.Contains(t, o.Reason, "the rollback failed")
	assert.Contains(t, o.Reason, "not ready", "the candidate's failure and the rollback's are both said")
}

// TestSupervisorStartsTheAgent: in supervisor mode, an updater that starts
// where no agent runs (boot, a crash) starts the selected one, with none of
// the updater's environment.
func TestSupervisorStartsTheAgent(t *testing.T) {
	server := startArtifactServer(t)
	d := newDevice(t, server, nil)
	require.NoError(t, d.service.Stop(context.Background()))
	require.Empty(t, agentProcesses(d.paths))
	d.start(t)
	assert.Equal(t, "v1", running(t, d.paths, builds))
	for _, pid := range agentProcesses(d.paths) {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		require.NoError(t, err)
		assert.NotContains(t, string(env), updaterSecret, "the agent gets none of the updater's environment")
	}
}
