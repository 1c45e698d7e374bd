package main

import (
	"bufio"
	"encoding/json"
	"errors"
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

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// solarBinary builds the CLI once per test: kills and concurrent runs need
// real processes.
func solarBinary(t *testing.T, tags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "solar")
	out, err := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "building solar: %s", out)
	return bin
}

// indexes reads the index.json of every repository of a layout, by
// repository: each must be one whole JSON document.
func indexes(t *testing.T, dir string) map[string]ocispec.Index {
	t.Helper()
	out := map[string]ocispec.Index{}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return out // killed before it made the layout
	}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "index.json" {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var idx ocispec.Index
		require.NoError(t, json.Unmarshal(b, &idx), "%s is whole", p)
		assert.Equal(t, 2, idx.SchemaVersion)
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		require.NoError(t, err)
		out[filepath.ToSlash(rel)] = idx
		return nil
	}))
	return out
}

// tagCount counts the tags of every repository of a layout.
func tagCount(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	for _, idx := range indexes(t, dir) {
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
	bin := solarBinary(t)
	for round := range 3 {
		out := filepath.Join(t.TempDir(), "out")
		var wg sync.WaitGroup
		outputs := make([][]byte, 2)
		for i, ns := range []string{"alpha", "beta"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(bin, "render", "--no-credentials", "-n", ns, "--out", out, "../../examples")
				var err error
				outputs[i], err = cmd.CombinedOutput()
				assert.NoError(t, err, "round %d, %s: %s", round, ns, outputs[i])
			}()
		}
		wg.Wait()
		assert.Equal(t, 6+4, tagCount(t, out), "round %d: every tag of both shards (alpha: 2 bootstraps, 4 release charts; beta: 2 and 2)", round)
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
	bin := solarBinary(t)
	tree := t.TempDir()
	gen, err := exec.Command("go", "run", "../../scripts/genobjects", "-n", "2000", "-out", tree).CombinedOutput()
	require.NoError(t, err, "%s", gen)
	out := filepath.Join(t.TempDir(), "out")
	for i := range 6 {
		cmd := exec.Command(bin, "render", "--no-credentials", "--out", out, tree)
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(50+rand.IntN(1500)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		indexes(t, out) // whole after each kill
		if _, err := os.Stat(out); err == nil {
			v, err := exec.Command(bin, "verify", "--out", out).CombinedOutput()
			assert.NoError(t, err, "verify after kill %d: %s", i, v)
		}
		t.Logf("kill %d done", i)
	}

	// SIGTERM once the run reports its first Target (its handler is
	// installed by then; on a loaded machine a fixed 300 ms may not reach it).
	cmd := exec.Command(bin, "render", "--no-credentials", "--out", out, tree)
	progress, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	rest := bufio.NewReader(progress)
	_, _ = rest.ReadString('\n')
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_, _ = io.Copy(io.Discard, rest) // to its end: the run has exited
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		assert.Equal(t, 143, exit.ExitCode(), "SIGTERM: 128+15")
	} else {
		t.Logf("the render finished before SIGTERM: %v", err)
	}
	indexes(t, out)
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

// TestLayoutRefusesWhatIsNotOne: solar writes only into its own layouts and
// follows no symlink inside them.
func TestLayoutRefusesWhatIsNotOne(t *testing.T) {
	render := func(out string) (int, string) {
		code, _, stderr := solar(t, "render", "--no-credentials", "-n", "beta", "--out", out, "../../examples")
		return code, stderr
	}
	notLayout := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notLayout, "index.json"), []byte(`{"mine": true}`), 0o644))
	code, stderr := render(notLayout)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "is not empty and not a solar layout (no .solar-layout)")
	b, _ := os.ReadFile(filepath.Join(notLayout, "index.json"))
	assert.JSONEq(t, `{"mine": true}`, string(b), "left as it was")

	out := filepath.Join(t.TempDir(), "out")
	code, stderr = render(out)
	require.Equal(t, 0, code, stderr)

	secret := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{}`), 0o600))
	linked := filepath.Join(t.TempDir(), "linked")
	require.NoError(t, os.CopyFS(linked, os.DirFS(out)))
	repoIndex := filepath.Join("beta", "bootstrap-plant-1", "index.json")
	require.NoError(t, os.Remove(filepath.Join(linked, repoIndex)))
	require.NoError(t, os.Symlink(secret, filepath.Join(linked, repoIndex)))
	code, stderr = render(linked)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "index.json is not a regular file")

	b, err := os.ReadFile(filepath.Join(out, repoIndex))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, repoIndex), append(b, []byte(`{"trailing": 1}`)...), 0o600))
	code, stderr = render(out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "index.json is damaged")
}
