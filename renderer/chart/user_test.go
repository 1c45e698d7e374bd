package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// nobody is the uid and gid the archive test runs as when this test is root.
const nobody = 65534

// TestPackageIsTheSameForAnyUser runs TestPackageIsReproducible, whose header
// checks demand uid and gid 0, as an unprivileged user. Run as root, as CI
// does, those checks alone cannot tell a header that writes the host's uid
// from one that writes 0.
func TestPackageIsTheSameForAnyUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skipf("not root (uid %d): TestPackageIsReproducible already checks the header as a user whose uid is not 0", os.Getuid())
	}
	// A world-readable copy of what the test reads: the test binary, go.mod
	// and examples/.
	dir := t.TempDir()
	// t.TempDir is <tmp>/<test name><random>/<n>, both made 0700.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	root := testenv.Root(t)
	require.NoError(t, os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(filepath.Join(root, "examples"))))
	for _, f := range []struct{ from, to string }{
		{filepath.Join(root, "go.mod"), filepath.Join(dir, "go.mod")},
		{os.Args[0], filepath.Join(dir, "chart.test")},
	} {
		b, err := os.ReadFile(f.from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(f.to, b, 0o755))
	}
	work := filepath.Join(dir, "renderer", "chart")
	require.NoError(t, os.MkdirAll(work, 0o755))

	cmd := exec.Command(filepath.Join(dir, "chart.test"), "-test.run=^TestPackageIsReproducible$", "-test.count=1", "-test.v")
	cmd.Dir = work
	cmd.Env = []string{"HOME=" + work, "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "TestPackageIsReproducible as uid %d:\n%s", nobody, out)
	require.Contains(t, string(out), "--- PASS: TestPackageIsReproducible", "the test ran as uid %d", nobody)
}
