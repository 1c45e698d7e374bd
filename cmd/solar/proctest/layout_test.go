package proctest

import (
	"bufio"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// examples is the repository's examples/ folder.
const examples = "../../../examples"

func decodeReport(t *testing.T, out string) pipeline.Report {
	t.Helper()
	var r pipeline.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// tagCount counts the tags of every repository of a layout.
func tagCount(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	for _, idx := range testenv.LayoutIndexes(t, dir) {
		n += len(idx.Manifests)
	}
	return n
}

// TestLayoutConcurrentRenders: two CI shards render into one out/ at once;
// the lock makes the second wait, and no tag is lost.
func TestLayoutConcurrentRenders(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds solar and runs it as processes")
	}
	bin := testenv.SolarBinary(t)
	for round := range 3 {
		out := filepath.Join(t.TempDir(), "out")
		var wg sync.WaitGroup
		outputs := make([][]byte, 2)
		for i, ns := range []string{"alpha", "beta"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(bin, "render", "--no-credentials", "-n", ns, "--out", out, examples)
				var err error
				outputs[i], err = cmd.CombinedOutput()
				assert.NoError(t, err, "round %d, %s: %s", round, ns, outputs[i])
			}()
		}
		wg.Wait()
		assert.Equal(t, 6+4+2*2, tagCount(t, out), "round %d: every tag of both shards (alpha: 2 bootstraps, 4 release charts, its index; beta: 2, 2 and its index; an index: its version 0.0.1 and the tag index)", round)
		info, err := os.Stat(out)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "only the owner reads the layout")
	}
}

// TestLayoutSurvivesKills: kill -9 at any moment leaves a layout the next
// render takes; SIGTERM stops the run, saves what it completed, exits 143.
func TestLayoutSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds solar and runs it as processes")
	}
	bin := testenv.SolarBinary(t)
	tree := t.TempDir()
	gen, err := exec.Command("go", "run", "../../../scripts/genobjects", "-n", "2000", "-out", tree).CombinedOutput()
	require.NoError(t, err, "%s", gen)
	out := filepath.Join(t.TempDir(), "out")
	for i := range 6 {
		cmd := exec.Command(bin, "render", "--no-credentials", "--out", out, tree)
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(50+rand.IntN(1500)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		testenv.LayoutIndexes(t, out) // whole after each kill
		if _, err := os.Stat(out); err == nil {
			v, err := exec.Command(bin, "verify", "--out", out).CombinedOutput()
			if !strings.Contains(string(v), "nothing to verify: no chart repository in the layout") { // killed before its first save
				assert.NoError(t, err, "verify after kill %d: %s", i, v)
			}
		}
		t.Logf("kill %d done", i)
	}

	// SIGTERM once the run reports its first Target (its handler is
	// installed by then; on a loaded machine a fixed 300 ms may not reach it):
	// -v prints a line per Target on a pipe. Into a new layout: a cold
	// render of 2,000 Targets cannot end before the signal, as one over
	// the layout the kills left might.
	out = filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "render", "-v", "--no-credentials", "--out", out, tree)
	progress, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	rest := bufio.NewReader(progress)
	for line := ""; !strings.HasPrefix(line, "[1/"); {
		if line, err = rest.ReadString('\n'); err != nil {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	said, _ := io.ReadAll(rest) // to its end: the run has exited
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the render ended before SIGTERM: %s", said)
	assert.Equal(t, 143, exit.ExitCode(), "SIGTERM: 128+15")
	// How far it got, not the error of what the signal cut short.
	assert.Regexp(t, `solar: interrupted after \d+ of \d+ Targets: what was finished stays; run again to continue\n$`, string(said))
	testenv.LayoutIndexes(t, out)
	v, err := exec.Command(bin, "verify", "--out", out).CombinedOutput()
	assert.NoError(t, err, "verify after SIGTERM: %s", v)

	final, err := exec.Command(bin, "render", "--no-credentials", "-o", "json", "--out", out, tree).Output()
	require.NoError(t, err)
	again, err := exec.Command(bin, "render", "--no-credentials", "--dry-run", "-o", "json", "--out", out, tree).Output()
	require.NoError(t, err)
	for _, tr := range decodeReport(t, string(again)).Targets {
		assert.Equal(t, "unchanged", tr.Action, "%s/%s after the kills", tr.Namespace, tr.Name)
	}
	assert.NotEmpty(t, decodeReport(t, string(final)).Targets)
}
