package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestIndexAfterAKilledPublish kills a publish after it pushed its charts
// and before it wrote the namespace's index (killpoint index-commit), then
// publishes the input of the run before it again: the charts the killed run
// changed must change back at a new version. The index named their old
// versions, whose content the old input equals; had their entries not been
// removed before the push, the publish would take those for unchanged while
// the registry's newest versions hold the killed run's content. A dry run
// that asks every repository (--full) then finds nothing to do, and verify
// passes after the kill and at the end. The same again when the killed run
// is a --full one, which reads no index.
func TestIndexAfterAKilledPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills solar publish against a real registry")
	}
	bin := testenv.SolarBinary(t, "killpoints")
	trees := genTrees(t, "10", "5")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	pw := reg.Password + "\n"
	solar := func(env string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(pw)
		if env != "" {
			cmd.Env = append(os.Environ(), env)
		}
		return cmd
	}
	login := []string{"--registry", reg.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"}
	publish := func(tree string, more ...string) []string {
		return append(append([]string{"publish", "--no-credentials", tree}, login...), more...)
	}
	verify := func() {
		t.Helper()
		out, err := solar("", append([]string{"verify"}, login...)...).CombinedOutput()
		require.NoError(t, err, "verify: %s", out)
		assert.Contains(t, string(out), "checked 2 namespace indexes")
	}

	out, err := solar("", publish(trees[0])...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	// Killed as it is, then with --full: a run that reads no index must
	// remove the entries of what it pushes all the same.
	for round, mode := range []string{"", "--full"} {
		var more []string
		if mode != "" {
			more = append(more, mode)
		}
		err = solar("SOLAR_KILLPOINT=index-commit", publish(trees[1], more...)...).Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "round %q", mode)
		require.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), "killed before the index was written")
		verify()

		b, err := solar("", publish(trees[0], "-o", "json")...).Output()
		require.NoError(t, err)
		back := decodeReport(t, string(b))
		changedBack := 0
		for _, tr := range back.Targets {
			if tr.Action == "update" {
				changedBack++
				assert.Equal(t, fmt.Sprintf("0.0.%d", 3+2*round), tr.Version, "%s/%s after a kill %q: the old content at a new version", tr.Namespace, tr.Name, mode)
			}
		}
		assert.Positive(t, changedBack, "the Targets the killed run changed change back")
		b, err = solar("", publish(trees[0], "--full", "--dry-run", "-o", "json")...).Output()
		require.NoError(t, err)
		full := decodeReport(t, string(b))
		require.Len(t, full.Targets, 10)
		for i, tr := range full.Targets {
			assert.Equal(t, "unchanged", tr.Action, "%s/%s: asked the full way", tr.Namespace, tr.Name)
			assert.Equal(t, back.Targets[i].Version, tr.Version, "%s/%s: the version the index gave is the newest", tr.Namespace, tr.Name)
		}
		verify()
	}
}
