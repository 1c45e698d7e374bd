package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

// agents are the agent builds the tests serve, by name: v1 and v2 ready,
// and v2 builds that misbehave.
type agents map[string][]byte

// What every test of the package shares, built once by TestMain: the agent
// builds, and the updater built with kill points (without SOLAR_KILLPOINT and
// SOLAR_FAILPOINT it is the normal updater).
var (
	builds     agents
	updaterBin string
	peerBin    string // testdata/peer
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() { // every test here runs processes: nothing to build
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "solar-updater-test")
	if err == nil {
		err = buildAll(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildAll builds the agents and the updater into dir.
func buildAll(dir string) error {
	build := func(pkg, name, ldflags, tags string) (string, error) {
		out := filepath.Join(dir, name)
		if b, err := exec.Command("go", "build", "-tags", tags, "-ldflags", ldflags, "-o", out, pkg).CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s: %w: %s", pkg, err, b)
		}
		return out, nil
	}
	builds = agents{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(2)
	for name, flags := range map[string]string{
		"v1":                    "-X main.version=1.0.0",
		"v2":                    "-X main.version=2.0.0",
		"v2-never-ready":        "-X main.version=2.0.0 -X main.behaviour=never-ready",
		"v2-crash-at-start":     "-X main.version=2.0.0 -X main.behaviour=crash-at-start",
		"v2-crash-after-commit": "-X main.version=2.0.0 -X main.behaviour=crash-after-commit",
		"v2-probe-fails":        "-X main.version=2.0.0 -X main.behaviour=probe-fails",
		"v2-wrong-version":      "-X main.version=2.0.1",
		"v1-never-ready":        "-X main.version=1.0.0 -X main.behaviour=never-ready",
		"v3-never-ready":        "-X main.version=3.0.0 -X main.behaviour=never-ready",
		"v2-ready-devzero":      "-X main.version=2.0.0 -X main.behaviour=ready-devzero",
		"v2-ready-fifo":         "-X main.version=2.0.0 -X main.behaviour=ready-fifo",
		"v2-daemonize":          "-X main.version=2.0.0 -X main.behaviour=daemonize",
		// One per condition of strict readiness, withheld (ready_test.go).
		"v2-deps-fail":        "-X main.version=2.0.0 -X main.behaviour=deps-fail",
		"v2-nats-unreachable": "-X main.version=2.0.0 -X main.behaviour=nats-unreachable",
		"v2-snapshot-blocked": "-X main.version=2.0.0 -X main.behaviour=snapshot-blocked",
		"v2-recovery-fails":   "-X main.version=2.0.0 -X main.behaviour=recovery-fails",
		"v2-publish-refused":  "-X main.version=2.0.0 -X main.behaviour=publish-refused",
	} {
		// Two at a time: linking is most of it, and the machine may
		// have two cores.
		g.Go(func() error {
			file, err := build("../solar-fleet-agent", name, flags, "")
			if err != nil {
				return err
			}
			b, err := os.ReadFile(file)
			mu.Lock()
			builds[name] = b
			mu.Unlock()
			return err
		})
	}
	g.Go(func() (err error) { updaterBin, err = build(".", "solar-updater", "", "killpoints"); return err })
	g.Go(func() (err error) { peerBin, err = build("./testdata/peer", "peer", "", ""); return err })
	if err := g.Wait(); err != nil {
		return err
	}
	// Run by other users: the folder is theirs to enter.
	return os.Chmod(dir, 0o755)
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// artifactServer serves blobs over HTTPS: /blobs/<digest> is the agent
// build of that digest; /bad/<how>/<digest> serves it damaged.
type artifactServer struct {
	*httptest.Server
	caFile string
	blobs  map[string][]byte
	// hits counts the requests served.
	hits atomic.Int64
}

func startArtifactServer(t *testing.T) *artifactServer {
	t.Helper()
	if testing.Short() { // TestMain built nothing to run
		t.Skip("-short: runs updater and agent processes")
	}
	s := &artifactServer{blobs: map[string][]byte{}}
	for _, b := range builds {
		s.blobs[digestOf(b)] = b
	}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
		b, ok := s.blobs[parts[len(parts)-1]]
		if !ok || (parts[0] != "blobs" && parts[0] != "bad") {
			http.NotFound(w, r)
			return
		}
		if parts[0] == "bad" {
			switch parts[1] {
			case "oversized":
				b = append(bytes.Clone(b), make([]byte, 4096)...)
			case "truncated":
				b = b[:len(b)/2]
			case "other":
				b = bytes.Clone(b)
				b[len(b)/2] ^= 0xff
			}
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	s.caFile = filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(s.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644))
	return s
}

// attempt is a sealed attempt to install build as version, from path (the
// URL path before the digest: "blobs" or "bad/<how>").
func (s *artifactServer) attempt(t *testing.T, b []byte, version, path string) wire.Attempt {
	t.Helper()
	d := digestOf(b)
	a, err := wire.Attempt{DeviceID: "dev-1", TargetVersion: version, Artifact: wire.Artifact{
		URL: s.URL + "/" + path + "/" + d, Digest: d, Size: int64(len(b)), Platform: "linux/amd64"}}.Seal()
	require.NoError(t, err)
	return a
}

// device is a root folder with v1 installed, selected and running under the
// supervisor, and the updater binary to run on it.
type device struct {
	paths   updater.Paths
	bin     string // the updater: updaterBin, or a wrapper around it
	caFile  string
	service updater.Supervisor
	group   int      // --group
	extra   []string // more updater flags
	// failpoint makes a call of the updater fail (killpoint.Fail).
	failpoint string
}

// deviceOptions vary a device: the first build installed (v1 by default),
// the agent's arguments besides --root, more updater flags, and whether the
// agent runs as its own user (agentUID, group agentGroup) as on a device.
type deviceOptions struct {
	first        string
	agentArgs    []string
	extra        []string
	unprivileged bool
}

// The agent's user and group on an unprivileged device, and a user outside
// that group: none of them is root.
const (
	agentGroup  = 4242
	agentUID    = 4243
	outsiderUID = 4244
)

// newDevice installs v1 in a new root, selects it and starts it under the
// supervisor with agentArgs besides --root; extra are more updater flags.
func newDevice(t *testing.T, s *artifactServer, agentArgs []string, extra ...string) *device {
	return newDeviceWith(t, s, deviceOptions{agentArgs: agentArgs, extra: extra})
}

func newDeviceWith(t *testing.T, s *artifactServer, o deviceOptions) *device {
	t.Helper()
	root := t.TempDir()
	d := &device{paths: updater.Paths{Root: root}, bin: updaterBin, caFile: s.caFile, group: os.Getgid(), extra: o.extra}
	d.service = updater.Supervisor{Paths: d.paths, Args: append([]string{"--root", d.paths.Root}, o.agentArgs...), StopTimeout: 2 * time.Second}
	if o.first == "" {
		o.first = "v1"
	}
	first := builds[o.first]
	digest := digestOf(first)
	require.NoError(t, os.MkdirAll(d.paths.Version(digest), 0o755))
	require.NoError(t, os.WriteFile(d.paths.Binary(digest), first, 0o755))
	require.NoError(t, os.Symlink(d.paths.Binary(digest), d.paths.Current()))
	// The folders the updater makes, for the agent the test starts first.
	require.NoError(t, os.MkdirAll(d.paths.Run(), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Dir(d.paths.Log()), 0o700))
	if o.unprivileged {
		// The agent's user enters the root, as it would /var/lib/solar-updater.
		require.NoError(t, os.Chmod(root, 0o755))
		require.NoError(t, os.Chmod(filepath.Dir(root), 0o755))
		require.NoError(t, os.Chown(d.paths.Run(), agentUID, agentGroup))
		d.service.Credential = &syscall.Credential{Uid: agentUID, Gid: agentGroup}
		d.group = agentGroup
		d.extra = append(d.extra, "--agent-uid", fmt.Sprint(agentUID), "--agent-gid", fmt.Sprint(agentGroup))
	}
	// The cgroup the updater finds for this root (--cgroup auto), or none.
	d.service.Cgroup, _ = updater.FindCgroup(d.paths)
	require.NoError(t, d.service.Start(context.Background()))
	t.Cleanup(func() {
		_ = d.service.Stop(context.Background())
		killAgents(d.paths)
		assert.NoError(t, d.service.Cgroup.Remove())
	})
	return d
}

// updaterSecret is in the updater's environment, never in an agent's.
const updaterSecret = "SOLAR_TEST_ROOT_SECRET=s3cret-of-root"

// updaterCmd is the updater on the device, killed at killpoint when set.
func (d *device) updaterCmd(killpoint string) *exec.Cmd {
	args := []string{"--root", d.paths.Root, "--group", fmt.Sprint(d.group), "--ca-file", d.caFile, "--ready-timeout", "3s", "--stop-timeout", "2s"}
	if d.service.Credential == nil {
		args = append(args, "--agent-as-root")
	}
	for _, a := range d.service.Args { // the agent the updater starts is the one the test started
		args = append(args, "--agent-arg", a)
	}
	args = append(args, d.extra...)
	cmd := exec.Command(d.bin, args...)
	// updaterSecret stands for what a root shell's environment holds.
	cmd.Env = append(os.Environ(), "SOLAR_KILLPOINT="+killpoint, "SOLAR_FAILPOINT="+d.failpoint, updaterSecret)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// run starts the updater (killed at killpoint when set), sends the attempt
// and returns the final outcome, or ok false when the updater died first.
func (d *device) run(t *testing.T, killpoint string, a wire.Attempt) (wire.Outcome, bool) {
	t.Helper()
	return d.runSeeing(t, killpoint, a, nil, new(bytes.Buffer))
}

// runSeeing is run that also calls seen for every outcome and writes the
// updater's logs into logs.
func (d *device) runSeeing(t *testing.T, killpoint string, a wire.Attempt, seen func(wire.Outcome), logs *bytes.Buffer) (wire.Outcome, bool) {
	t.Helper()
	cmd := d.updaterCmd(killpoint)
	cmd.Stdout, cmd.Stderr = logs, logs
	_ = os.Remove(d.paths.Socket())
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	// Wait for the socket, or for the updater to die while resuming.
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(d.paths.Socket()); err == nil {
			break
		}
		select {
		case err := <-exited:
			exited <- err
			return wire.Outcome{}, false
		case <-time.After(20 * time.Millisecond):
		}
		require.False(t, time.Now().After(deadline), "the updater made no socket: %s", logs.String())
	}
	if d.group != os.Getgid() {
		return d.sendAsAgent(t, a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := wire.Send(ctx, d.paths.Socket(), a, seen)
	if err != nil {
		return o, false
	}
	return o, true
}

// sendAsAgent sends the attempt as the agent's user, whose group the
// socket serves, and returns the last outcome, or ok false when the
// updater gave none.
func (d *device) sendAsAgent(t *testing.T, a wire.Attempt) (wire.Outcome, bool) {
	t.Helper()
	b, err := json.Marshal(wire.Request{Attempt: &a})
	require.NoError(t, err)
	out, _ := as(t, agentUID, agentGroup, nil, string(b)+"\n", peerBin, d.paths.Socket())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var o wire.Outcome
	if json.Unmarshal([]byte(lines[len(lines)-1]), &o) != nil || o.State == "" {
		return o, false
	}
	return o, true
}

// selected is the build the agent link selects, checked whole: its bytes
// are those of a build the test knows.
func selected(t *testing.T, p updater.Paths, a agents) string {
	t.Helper()
	target, err := os.Readlink(p.Current())
	require.NoError(t, err, "the agent link is there")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	for name, build := range a {
		if bytes.Equal(b, build) && strings.HasSuffix(filepath.Dir(target), strings.TrimPrefix(digestOf(build), "sha256:")) {
			return name
		}
	}
	t.Fatalf("the selected binary %s is no whole build", target)
	return ""
}

// running is the build the one running agent process executes, waiting a
// moment for the process count to settle at one.
func running(t *testing.T, p updater.Paths, a agents) string {
	t.Helper()
	var pids []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if pids = agentProcesses(p); len(pids) == 1 {
			break
		}
	}
	require.Len(t, pids, 1, "exactly one agent process runs")
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pids[0]))
	require.NoError(t, err)
	for name, build := range a {
		if filepath.Base(filepath.Dir(exe)) == strings.TrimPrefix(digestOf(build), "sha256:") {
			return name
		}
	}
	t.Fatalf("the running agent %s is no build", exe)
	return ""
}
