package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/txtar"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestGolden runs each case of testdata/golden/*.txtar twice on a fresh copy
// of examples/, the way a user sees it: on pipes (in process), where stdout
// and stderr must be exactly "stdout" and "stderr", and on a real terminal
// (the binary under a pseudo-terminal, stdout and stderr both on it), where
// the screen must be exactly "tty": what the terminal shows, each line as
// its last redraw leaves it, escapes written as <ESC>. Sections:
//
//	cmd      the arguments of solar, one per line
//	setup    commands run before, each must exit 0: solar's arguments, or
//	         "replace FILE|OLD|NEW" (the first OLD in FILE)
//	exit     the exit code (0 when missing)
//	env      KEY=VALUE lines set for the terminal run (NO_COLOR=1)
//	services "registry": a real registry (anonymous, plain HTTP) per run,
//	         $REGISTRY in cmd and setup, and in the output
//
// Rates, times and the work folder are normalized. go test -run TestGolden
// -update rewrites stdout, stderr and tty.
func TestGolden(t *testing.T) {
	// What the developer's shell may set changes the output.
	t.Setenv("NO_COLOR", "")
	t.Setenv("SOURCE_DATE_EPOCH", "")
	files, err := filepath.Glob("testdata/golden/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			require.NoError(t, err)
			want := 0
			if s := strings.TrimSpace(section(ar, "exit")); s != "" {
				want, err = strconv.Atoi(s)
				require.NoError(t, err)
			}

			dir, args := goldenSetup(t, ar)
			var stdout, stderr bytes.Buffer
			code := inDir(t, dir, func() int { return run(context.Background(), args, strings.NewReader(""), &stdout, &stderr) })
			assert.Equal(t, want, code, "exit code on pipes; stderr:\n%s", stderr.String())
			norm := func(text, dir string) string {
				text = normalize(text, dir)
				if section(ar, "services") != "" {
					// A bootstrap chart names the registry's URL, whose
					// port varies: so does its digest.
					text = bootstrapDigest.ReplaceAllString(text, "${1}<digest>")
				}
				return text
			}
			got := map[string]string{"stdout": norm(stdout.String(), dir), "stderr": norm(stderr.String(), dir)}

			dir, args = goldenSetup(t, ar)
			screen, code := onTerminal(t, dir, args, strings.Fields(section(ar, "env")))
			assert.Equal(t, want, code, "exit code on a terminal; screen:\n%s", screen)
			got["tty"] = norm(screen, dir)

			for _, name := range []string{"stdout", "stderr", "tty"} {
				if *update {
					setSection(ar, name, got[name])
					continue
				}
				assert.Equal(t, section(ar, name), got[name], "%s of solar %s", name, strings.Join(args, " "))
			}
			if *update {
				require.NoError(t, os.WriteFile(file, txtar.Format(ar), 0o644))
			}
		})
	}
}

// goldenSetup starts the services, copies examples/ into a new folder and
// runs the setup there; args are the command's, $REGISTRY replaced.
func goldenSetup(t *testing.T, ar *txtar.Archive) (dir string, args []string) {
	t.Helper()
	dir = t.TempDir()
	testenv.CopyExamples(t, dir)
	expand := func(s string) string { return s }
	if strings.TrimSpace(section(ar, "services")) == "registry" {
		host := testenv.StartRegistry(t, testenv.RegistryOptions{NoAuth: true}).Host
		expand = func(s string) string { return strings.ReplaceAll(s, "$REGISTRY", host) }
	}
	for _, line := range strings.Split(strings.TrimSpace(expand(section(ar, "setup"))), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "replace":
			f = strings.Split(strings.TrimPrefix(line, "replace "), "|")
			require.Len(t, f, 3, line)
			f = append([]string{"replace"}, f...)
			p := filepath.Join(dir, f[1])
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Contains(t, string(b), f[2], line)
			require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), f[2], f[3], 1)), 0o644))
		default:
			var out bytes.Buffer
			code := inDir(t, dir, func() int { return run(context.Background(), f, strings.NewReader(""), &out, &out) })
			require.Equal(t, 0, code, "setup %s:\n%s", line, out.String())
		}
	}
	return dir, strings.Fields(expand(section(ar, "cmd")))
}

// inDir runs f in dir as the working directory.
func inDir(t *testing.T, dir string, f func() int) int {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(dir))
	defer func() { require.NoError(t, os.Chdir(wd)) }()
	return f()
}

// onTerminal runs solar (this test binary as main) in dir with stdin, stdout
// and stderr on a new pseudo-terminal, and returns what it wrote there.
func onTerminal(t *testing.T, dir string, args, env []string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SOLAR_TEST_MAIN=1", "TERM=xterm")
	cmd.Env = append(cmd.Env, env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	require.NoError(t, err)
	var screen bytes.Buffer
	_, err = io.Copy(&screen, tty)
	if !errors.Is(err, syscall.EIO) { // the terminal's end once solar exits
		require.NoError(t, err)
	}
	tty.Close()
	code := 0
	var exit *exec.ExitError
	if err := cmd.Wait(); errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return screen.String(), code
}

// What varies from run to run: rates, durations, the work folder, the
// registry's port.
var (
	rate       = regexp.MustCompile(`\d+(\.\d+)?/s\b`)
	durationRe = regexp.MustCompile(`\b(ETA|in) [0-9.]+(ns|µs|ms|s|m[0-9.]+s|h[0-9.m]+s)\b`)
	took       = regexp.MustCompile(`\bin [0-9.]+(ns|µs|ms|s)\b`)
	registryRe = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	// The digest in a table row of a bootstrap chart.
	bootstrapDigest = regexp.MustCompile(`(/bootstrap-\S+ +\S+ +)[0-9a-f]{12}\b`)
)

// normalize is text as a terminal leaves it (a line is what its last
// carriage return leaves; the pseudo-terminal's CRLF a newline), escapes
// visible, and what varies replaced.
func normalize(text, dir string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if k := strings.LastIndex(l, "\r"); k >= 0 {
			lines[i] = l[k+1:]
		}
	}
	text = strings.Join(lines, "\n")
	text = strings.ReplaceAll(text, "\x1b", "<ESC>")
	text = strings.ReplaceAll(text, dir, "$WORK")
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		text = strings.ReplaceAll(text, real, "$WORK")
	}
	text = registryRe.ReplaceAllString(text, "$$REGISTRY")
	text = rate.ReplaceAllString(text, "R/s")
	text = durationRe.ReplaceAllString(text, "$1 T")
	return took.ReplaceAllString(text, "in T")
}
