package docs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// vars are the variables the docs introduce in <!-- env --> blocks, each with
// the service that gives it its value here: the docs name the reader's
// registry and NATS server, the test its own.
var vars = map[string]string{
	"REGISTRY":          "registry", // HOST:PORT/solar
	"REGISTRY_USER":     "registry",
	"REGISTRY_PASSWORD": "registry",
	"PULL_PASSWORD":     "registry", // what a Target's cluster pulls with
	"NATS_URL":          "nats",
	"OIDC_ISSUER":       "oidc", // a test OpenID Provider standing in for Zitadel
	"OIDC_CA":           "oidc",
	"DEVICE_KEY":        "oidc", // a machine key of device lab-01 at that provider
}

// files are the files the docs name and the service that puts each into
// the working directory: solar.yaml is the kubeconfig of the SolAr API
// server.
var files = map[string]string{"solar.yaml": "apiserver"}

func varNames() []string {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// needs are the services a block uses, by the variables and files it names.
func needs(b block) []string {
	var svcs []string
	for name, svc := range vars {
		if uses(b.text, name) && !slices.Contains(svcs, svc) {
			svcs = append(svcs, svc)
		}
	}
	for name, svc := range files {
		if strings.Contains(b.text, name) && !slices.Contains(svcs, svc) {
			svcs = append(svcs, svc)
		}
	}
	sort.Strings(svcs)
	return svcs
}

// copied are the folders and files of the repository the documented
// commands read; the Go source too, for the blocks that build the device
// binaries with go build and Solar's images with make images.
var copied = []string{"api", "charts", "config", "examples", "policies", "schemas", "scripts",
	"callout", "cmd", "controller", "device", "internal", "renderer", "ui", "go.mod", "go.sum", "Makefile"}

// goEnv are the go command's settings a block's go build keeps from the
// test's: the module and build caches (the block's HOME is empty), the proxy.
var goEnv = []string{"GOMODCACHE", "GOCACHE", "GOPROXY", "GOSUMDB", "GOFLAGS", "GOTOOLCHAIN", "GONOSUMDB", "GOPRIVATE"}

// session runs the blocks of one document in order, in a scratch copy of
// the repository, as a reader's terminal would: the files the blocks write
// and the variables they export carry over to the next block.
type session struct {
	t       *testing.T
	dir     string
	env     map[string]string
	started map[string]bool
}

// newSession makes the scratch copy, with the solar binary at bin/solar as
// make build leaves it, and a home folder of its own (no docker, helm or
// solar cache of the user's is read or written). bin/ is not on PATH: a
// document that calls solar puts it there as its reader would (README, Set
// up), or its first command exits 127. The tools cache is the reader's
// (SOLAR_TOOLS, which make exports), so that scripts/install-tools.sh NAME
// finds what make tools built.
func newSession(t *testing.T, root, solar string) *session {
	t.Helper()
	dir := t.TempDir()
	for _, d := range copied {
		src := filepath.Join(root, d)
		if fi, err := os.Stat(src); err == nil && !fi.IsDir() {
			b, err := os.ReadFile(src)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, d), b, 0o644))
			continue
		}
		require.NoError(t, os.CopyFS(filepath.Join(dir, d), os.DirFS(src)))
	}
	// Processes a block left running (a service started in the
	// background, an agent in its own session) end with the document.
	t.Cleanup(func() { killUnder(dir) })
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.Symlink(solar, filepath.Join(dir, "bin", "solar")))
	state := filepath.Join(t.TempDir(), "exported")
	require.NoError(t, os.WriteFile(state, nil, 0o600))
	s := &session{t: t, dir: dir, started: map[string]bool{}, env: map[string]string{
		"PATH":       os.Getenv("PATH"),
		"HOME":       t.TempDir(),
		"TMPDIR":     os.TempDir(),
		"LANG":       "C.UTF-8",
		"DOCS_STATE": state,
	}}
	if v := os.Getenv("SOLAR_TOOLS"); v != "" {
		s.env["SOLAR_TOOLS"] = v
	}
	for _, k := range goEnv {
		if v, err := exec.Command("go", "env", k).Output(); err == nil && strings.TrimSpace(string(v)) != "" {
			s.env[k] = strings.TrimSpace(string(v))
		}
	}
	return s
}

// start starts what a block needs, once per document.
func (s *session) start(svc string) {
	t := s.t
	if s.started[svc] {
		return
	}
	s.started[svc] = true
	switch svc {
	case "registry":
		reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
		s.env["REGISTRY"] = reg.Host + "/solar"
		s.env["REGISTRY_USER"], s.env["REGISTRY_PASSWORD"] = reg.Username, reg.Password
		s.env["PULL_PASSWORD"] = "a-pull-token-of-the-target"
		// Trusted as a registry with a public certificate is: the commands
		// need no --ca-file (Go's crypto/x509 reads SSL_CERT_FILE).
		s.env["SSL_CERT_FILE"] = reg.CAFile
	case "nats":
		s.env["NATS_URL"] = testenv.StartNATS(t).URL
	case "oidc":
		op := testenv.StartOIDC(t)
		key := filepath.Join(s.dir, "lab-01-key.json")
		require.NoError(t, os.WriteFile(key, op.AddDevice(t, "lab-01"), 0o600))
		s.env["OIDC_ISSUER"], s.env["OIDC_CA"], s.env["DEVICE_KEY"] = op.Issuer, op.CAFile, key
	case "apiserver":
		api := testenv.StartAPIServer(t)
		b, err := os.ReadFile(api.Kubeconfig)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(s.dir, "solar.yaml"), b, 0o600))
	default:
		t.Fatalf("unknown service %q", svc)
	}
}

// prelude runs before each block: bash's strict mode, the variables the
// blocks before exported; on exit, whatever the block exported is kept.
const prelude = `set -euo pipefail
source "$DOCS_STATE"
trap 'export -p >"$DOCS_STATE"' EXIT
`

// blockTimeout bounds one block: none of them takes more than seconds.
const blockTimeout = 2 * time.Minute

// tools are the CLIs besides solar that blocks call.
var tools = regexp.MustCompile(`(?m)(?:^|[\s|;&(])(cosign|cue|helm|kubectl|nats|oras)\s`)

// needTools fails the test, saying how to install it, when a CLI a block
// calls is missing: scripts/install-tools.sh builds each of them.
func needTools(t *testing.T, b block) {
	t.Helper()
	for _, m := range tools.FindAllStringSubmatch(b.text, -1) {
		testenv.Tool(t, m[1])
	}
}

// run runs one block with bash and fails the test, naming the block, the
// command and its output, when it exits otherwise than its marker says. It
// returns false then: the blocks after it build on it.
func (s *session) run(b block) bool {
	t := s.t
	needTools(t, b)
	for _, svc := range needs(b) {
		s.start(svc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", prelude+b.text)
	cmd.Dir = s.dir
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Its own process group, killed whole on timeout (a block may start
	// pipelines and background jobs).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code == 0 || ctx.Err() != nil {
		code = -1
	}
	t.Logf("%s: exit %d in %s", b, code, time.Since(start).Round(time.Millisecond))
	var why string
	switch {
	case ctx.Err() != nil:
		why = fmt.Sprintf("did not finish within %s", blockTimeout)
	case code != b.mark.exit:
		why = fmt.Sprintf("exited %d, want %d", code, b.mark.exit)
	case !strings.Contains(string(out), b.mark.expect):
		why = fmt.Sprintf("did not print %q", b.mark.expect)
	default:
		return true
	}
	t.Errorf("%s: the block %s:\n%s--- its output:\n%s", b, why, indent(b.text), indent(string(out)))
	return false
}

// write writes a <!-- file: PATH --> block into the working directory.
func (s *session) write(b block) {
	p := filepath.Join(s.dir, filepath.FromSlash(b.mark.path))
	require.NoError(s.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(s.t, os.WriteFile(p, []byte(b.text), 0o644), b.String())
}

func indent(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return "    " + strings.ReplaceAll(s, "\n", "\n    ") + "\n"
}

// killUnder kills every process whose command line or executable names a
// path under dir, looking again until a look finds none (at most 10): a
// service a block started in the background may be starting still (its
// script between its checks and its exec) when the first look passes it
// (a nats-server of README's outlived a docs run so).
func killUnder(dir string) {
	for range 10 {
		if killUnderOnce(dir) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// killUnderOnce is one look of killUnder: how many it killed.
func killUnderOnce(dir string) int {
	killed := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if strings.Contains(string(cmdline), dir) || strings.HasPrefix(exe, dir) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	return killed
}
