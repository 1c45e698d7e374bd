package proctest

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// genTrees writes two inputs of n Targets, per per namespace, the second
// with the userdata of half the Targets and the values of one Release
// changed: between the two, one release chart and every bootstrap chart of a
// namespace change.
func genTrees(t *testing.T, n, per string) (trees [2]string) {
	t.Helper()
	for i, change := range [][]string{{"-change", "0"}, {"-change", "50", "-change-release"}} {
		trees[i] = filepath.Join(t.TempDir(), "tree")
		args := append([]string{"run", "../../../scripts/genobjects", "-targets", n, "-per", per, "-out", trees[i]}, change...)
		out, err := exec.Command("go", args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	return trees
}

// killSeed seeds where the kills of TestKillsAnywhere land; a failure names
// it, and changing it here replays another series.
const killSeed = 20261130

// TestKillsAnywhere kills solar render and solar publish with SIGKILL, 30
// times each at seeded random moments of a run, the input changing between
// runs; then render at each step of saving the layout (package killpoint) and
// publish at chosen requests (the N-th blob upload, manifest PUT, manifest
// HEAD (a version check or a tag confirmation) or namespace index write). After every
// kill solar verify passes; at the end a run converges and a dry run after it
// is all unchanged.
func TestKillsAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 70 kills of solar processes")
	}
	rng := rand.New(rand.NewPCG(killSeed, killSeed))
	bin := testenv.SolarBinary(t, "killpoints")
	gen := func(n, per string) [2]string { return genTrees(t, n, per) }
	// command is solar with stdin.
	command := func(stdin string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		return cmd
	}
	// kill runs args, killed after a moment drawn from the first three
	// quarters of span; it says whether the kill came before the run ended.
	kill := func(span time.Duration, stdin string, args ...string) bool {
		cmd := command(stdin, args...)
		require.NoError(t, cmd.Start())
		timer := time.AfterFunc(time.Duration(rng.Int64N(int64(span)*3/4)), func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		err := cmd.Wait()
		timer.Stop()
		return err != nil
	}
	// span is how long a run takes that changes half the Targets, as the
	// killed runs do: args with the first tree, then timed with the second.
	span := func(stdin string, trees [2]string, args func(tree string) []string) time.Duration {
		var d time.Duration
		for _, tree := range trees {
			start := time.Now()
			out, err := command(stdin, args(tree)...).CombinedOutput()
			require.NoError(t, err, "%s", out)
			d = time.Since(start)
		}
		return d
	}
	verify := func(stdin string, args ...string) {
		t.Helper()
		out, err := command(stdin, append([]string{"verify"}, args...)...).CombinedOutput()
		if err != nil && strings.Contains(string(out), "nothing to verify: no chart repository in ") {
			return // killed before its first push
		}
		require.NoError(t, err, "verify (seed %d): %s", killSeed, out)
	}
	converges := func(targets int, stdin string, args ...string) {
		t.Helper()
		out, err := command(stdin, args...).CombinedOutput()
		require.NoError(t, err, "the run after the kills: %s", out)
		again, err := command(stdin, append(args, "--dry-run", "-o", "json")...).Output()
		require.NoError(t, err)
		r := decodeReport(t, string(again))
		require.Len(t, r.Targets, targets)
		for _, tr := range r.Targets {
			assert.Equal(t, "unchanged", tr.Action, "%s/%s after the kills", tr.Namespace, tr.Name)
		}
	}

	t.Run("render", func(t *testing.T) {
		trees := gen("40", "20")
		out := filepath.Join(t.TempDir(), "out")
		render := func(dir string) func(string) []string {
			return func(tree string) []string { return []string{"render", "--no-credentials", "--out", dir, tree} }
		}
		check := func() {
			t.Helper()
			testenv.LayoutIndexes(t, out)
			if _, err := os.Stat(out); err == nil {
				verify("", "--out", out)
			}
		}
		d := span("", trees, render(filepath.Join(t.TempDir(), "probe")))
		killed := 0
		for i := range 30 {
			if kill(d, "", render(out)(trees[i%2])...) {
				killed++
			}
			check()
		}
		t.Logf("render: %d of 30 runs killed before they ended (a run takes %v)", killed, d)
		assert.GreaterOrEqual(t, killed, 15, "most kills land inside a run")

		// Aimed: with the new indexes written but none renamed, after the
		// N-th rename (a run renames 42: 2 release charts and 40 bootstraps),
		// and after the last sync. Each run changes the input: the layout
		// first holds the other tree whole (after the kills it may hold this
		// one, and a run with nothing to save reaches no killpoint).
		for i, point := range []string{"layout-save-written", "layout-save-renamed#1", "layout-save-renamed#" + strconv.Itoa(2+rng.IntN(40)), "layout-save-synced"} {
			b, err := command("", render(out)(trees[(i+1)%2])...).CombinedOutput()
			require.NoError(t, err, "%s", b)
			cmd := command("", render(out)(trees[i%2])...)
			cmd.Env = append(os.Environ(), "SOLAR_KILLPOINT="+point)
			err = cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "render killed at %s (run %d)", point, i)
			assert.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), "render killed at %s", point)
			check()
		}
		converges(40, "", render(out)(trees[0])...)
	})

	t.Run("publish", func(t *testing.T) {
		// Smaller: verify reads every version of the registry after each kill.
		trees := gen("10", "5")
		reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
		proxy := testenv.StartProxy(t, reg.Host)
		pw := reg.Password + "\n"
		publish := func(registry, tree string) []string {
			return []string{"publish", "--no-credentials", "--plain-http", "--registry", registry, "--username", reg.Username, "--password-stdin", tree}
		}
		registry := proxy.Host + "/solar"
		verifyRegistry := []string{"--registry", registry, "--plain-http", "--username", reg.Username, "--password-stdin"}
		d := span(pw, trees, func(tree string) []string { return publish(proxy.Host+"/probe", tree) })
		killed := 0
		for i := range 30 {
			if kill(d, pw, publish(registry, trees[i%2])...) {
				killed++
			}
			verify(pw, verifyRegistry...)
		}
		t.Logf("publish: %d of 30 runs killed before they ended (a run takes %v)", killed, d)
		assert.GreaterOrEqual(t, killed, 15, "most kills land inside a run")

		// Aimed: the N-th request of a kind, N up to what a run makes.
		// An index write is the removal of the entries of what is about to
		// be pushed, or the namespace's index written last.
		most := map[string]int{"blob upload": 4, "manifest PUT": 4, "manifest HEAD": 4, "index write": 4}
		aims := map[string]func(method, path string) bool{
			"blob upload":   func(m, p string) bool { return m == "PUT" && strings.Contains(p, "/blobs/uploads/") },
			"manifest PUT":  func(m, p string) bool { return m == "PUT" && strings.Contains(p, "/manifests/") },
			"manifest HEAD": func(m, p string) bool { return m == "HEAD" && strings.Contains(p, "/manifests/") },
			"index write":   func(m, p string) bool { return m == "PUT" && strings.Contains(p, "/solar-index/manifests/") },
		}
		round, hit := 0, 0
		for _, name := range []string{"blob upload", "manifest PUT", "manifest HEAD", "index write"} {
			for range 3 {
				round++
				tree := trees[(round+1)%2] // the other input than the run before
				// Count the requests of this kind a run makes, then kill at
				// one of them.
				var mu sync.Mutex
				seen, target := 0, 0
				var cmd *exec.Cmd
				proxy.Hook(func(m, p string) {
					mu.Lock()
					defer mu.Unlock()
					if !aims[name](m, p) {
						return
					}
					seen++
					if seen == target && cmd != nil {
						_ = cmd.Process.Signal(syscall.SIGKILL)
					}
				})
				mu.Lock()
				seen, target = 0, 1+rng.IntN(most[name])
				cmd = command(pw, publish(registry, tree)...)
				mu.Unlock()
				require.NoError(t, cmd.Start())
				err := cmd.Wait()
				proxy.Hook(nil)
				mu.Lock()
				t.Logf("%s #%d: %d seen, killed: %v", name, target, seen, err != nil)
				if seen >= target {
					hit++
				}
				mu.Unlock()
				verify(pw, verifyRegistry...)
			}
		}
		assert.GreaterOrEqual(t, hit, 9, "most aimed kills found their request")
		converges(10, pw, publish(registry, trees[0])...)
	})
}
