package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// The CLI's golden cases, testdata/golden/*.txtar and the bad-input corpus
// testdata/vet/*.txtar, are one format: a txtar archive whose comment says
// what the case shows, with these sections:
//
//	cmd      the arguments of solar, one per line
//	setup    commands run before, each must exit 0: solar's arguments, or
//	         "replace FILE|OLD|NEW" (the first OLD in FILE)
//	exit     the exit code (0 when missing)
//	env      KEY=VALUE lines set for the terminal run (NO_COLOR=1)
//	services "registry": a real registry (anonymous, plain HTTP) per run,
//	         $REGISTRY in cmd and setup, and in the output
//	stdout   exactly what solar writes on stdout, on pipes
//	stderr   exactly what it writes on stderr, on pipes
//	tty      when present: the screen of solar run on a real terminal (the
//	         binary under a pseudo-terminal, stdout and stderr both on it),
//	         each line as its last redraw leaves it, escapes written <ESC>
//
// Every other section is an input file: a case that has some runs in a
// folder holding them alone; one that has none runs on a fresh copy of
// examples/. Rates, times and the work folder are normalized. go test
// -run 'TestGolden|TestVetBadInput' -update rewrites stdout, stderr and tty.
var update = flag.Bool("update", false, "rewrite the stdout, stderr and tty sections of testdata/{golden,vet}/*.txtar")

// outputs are the sections a run writes; the others are what it reads.
var outputs = []string{"stdout", "stderr", "tty"}

// golden runs the case in file, asserts its sections (or rewrites them
// with -update) and returns what solar wrote on stderr, on pipes.
func golden(t *testing.T, file string) string {
	t.Helper()
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
	if hasSection(ar, "tty") {
		dir, args = goldenSetup(t, ar)
		screen, code := onTerminal(t, dir, args, strings.Fields(section(ar, "env")))
		assert.Equal(t, want, code, "exit code on a terminal; screen:\n%s", screen)
		got["tty"] = norm(screen, dir)
	}
	for _, name := range outputs {
		if _, ok := got[name]; !ok {
			continue
		}
		if *update {
			setSection(ar, name, got[name])
			continue
		}
		assert.Equal(t, section(ar, name), got[name], "%s of solar %s", name, strings.Join(args, " "))
	}
	if *update {
		require.NoError(t, os.WriteFile(file, txtar.Format(ar), 0o644))
	}
	return got["stderr"]
}

// TestGolden runs each case of testdata/golden/*.txtar, the way a user sees
// the command: on pipes and on a terminal.
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
			require.True(t, hasSection(ar, "tty"), "a golden case shows the terminal too: add an empty tty section and run -update")
			golden(t, file)
		})
	}
}

// goldenSetup writes the case's input files into a new folder (or copies
// examples/ there when it has none), starts the services and runs the
// setup; args are the command's, $REGISTRY replaced.
func goldenSetup(t *testing.T, ar *txtar.Archive) (dir string, args []string) {
	t.Helper()
	dir = t.TempDir()
	if !writeInputs(t, ar, dir) {
		testenv.CopyExamples(t, dir)
	}
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

// writeInputs writes the case's input files (every section that is not one
// of the format's) into dir and says whether it had any.
func writeInputs(t *testing.T, ar *txtar.Archive, dir string) bool {
	t.Helper()
	any := false
	for _, f := range ar.Files {
		if slices.Contains(outputs, f.Name) || slices.Contains([]string{"cmd", "setup", "exit", "env", "services"}, f.Name) {
			continue
		}
		p := filepath.Join(dir, f.Name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.Data, 0o644))
		any = true
	}
	return any
}

// section is the content of an archive's section, "" when it has none.
func section(ar *txtar.Archive, name string) string {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	return ""
}

// hasSection says whether the archive has the section, empty or not.
func hasSection(ar *txtar.Archive, name string) bool {
	return slices.ContainsFunc(ar.Files, func(f txtar.File) bool { return f.Name == name })
}

// setSection sets a section of the archive, adding it when missing; an
// empty "stdout" is left out.
func setSection(ar *txtar.Archive, name, data string) {
	for i, f := range ar.Files {
		if f.Name == name {
			if data == "" && name == "stdout" {
				ar.Files = append(ar.Files[:i], ar.Files[i+1:]...)
			} else {
				ar.Files[i].Data = []byte(data)
			}
			return
		}
	}
	if data != "" || name != "stdout" {
		ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
	}
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
