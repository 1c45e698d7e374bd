// Command bench measures what users run, end to end, in one go: solar vet,
// render into the layout and publish to a real registry (the CNCF
// Distribution registry v3 on 127.0.0.1, started by scripts/start-registry.sh,
// configured as its docs recommend, behind a counting proxy), cold, no-op and
// after a 1 % change, at each size of -targets (the no-op also with --full, the
// protocol before the namespace index); and, beside it, the loop users
// would write instead (helm package + helm push per chart) against the same
// registry. It prints one Markdown table (docs/benchmarks.md).
// scripts/bench.sh runs it; by hand:
//
//	go run ./scripts/bench -solar bin/solar -targets 100,1000 [-per 100] [-helm 10]
//
// -registry-bin names the registry binaries to publish to (default
// registry, the one scripts/install-tools.sh builds); with more than one, each
// runs with the same config, and every publish row is measured against each in
// turn, at each size, in the same run: another build of the same lineage
// (Debian's docker-registry 2.8 in /usr/bin/docker-registry, say) is compared
// with it on the same machine at the same time. The vet and render rows and the
// helm baseline use the first.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
)

func main() {
	solar := flag.String("solar", "bin/solar", "the solar binary")
	sizes := flag.String("targets", "100,1000", "comma-separated numbers of Targets")
	per := flag.Int("per", 100, "Targets per namespace")
	helmTargets := flag.Int("helm", 10, "Targets the helm package + helm push baseline delivers")
	skip := flag.String("skip", "", "comma-separated steps to leave out: vet, render, publish, verify, full (the no-op rows with --full, which ask every repository as before the namespace index)")
	auth := flag.Bool("auth", true, "the registry asks for basic auth (htpasswd, bcrypt), as the tests' does; false: none, to see the cost of auth")
	signed := flag.Bool("sign", false, "also render and publish with --signing-key (an Ed25519 key made for the run), beside the unsigned runs")
	diffTargets := flag.Int("diff", 0, "instead of the steps: solar diff of this many Targets after a values change every Target gets, beside render --dry-run of the same change")
	memLimit := flag.String("memlimit", "", "also run each no-op render and publish with GOMEMLIMIT set to this (850MiB, say), as a row of its own")
	registryBins := flag.String("registry-bin", "registry", "comma-separated registry binaries (Distribution's lineage, run by scripts/start-registry.sh with the same config) to publish to, each in turn; the first also serves the helm baseline")
	flag.Parse()
	if err := run(*solar, *sizes, *per, *helmTargets, *diffTargets, *skip, *memLimit, *auth, *signed, strings.Split(*registryBins, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(solar, sizes string, per, helmTargets, diffTargets int, skip, memLimit string, auth, signed bool, bins []string) error {
	work, err := os.MkdirTemp("", "solar-bench-")
	if err != nil {
		return err
	}
	// Deleted at the end only: ext4 allocates inodes slowly for a while after
	// many were freed, which would slow the next step.
	defer os.RemoveAll(work)
	b := &bench{solar: solar, work: work, skip: skip, memLimit: memLimit}
	if signed {
		if b.key, err = writeKey(work); err != nil {
			return err
		}
	}
	for i, bin := range bins {
		bin = strings.TrimSpace(bin)
		path, err := exec.LookPath(bin)
		if err != nil {
			return fmt.Errorf("-registry-bin: %w (scripts/install-tools.sh builds registry and solar-testpki: put the bin directory it prints on PATH)", err)
		}
		reg, err := startRegistry(filepath.Join(work, fmt.Sprintf("registry-%d", i)), auth, path)
		if err != nil {
			return err
		}
		defer reg.stop()
		reg.proxy, err = countproxy.Start(reg.host)
		if err != nil {
			return err
		}
		defer reg.proxy.Close()
		reg.name = filepath.Base(bin)
		version, _ := exec.Command(path, "--version").CombinedOutput()
		fmt.Printf("registry %d: %s (%s)\n", i+1, path, strings.TrimSpace(string(version)))
		b.regs = append(b.regs, reg)
	}
	fmt.Printf("\n| Targets | step | run | wall s | solar CPU s | registry CPU s | peak RSS MB | charts new/unchanged | requests | per new chart | per unchanged Target | registry CPU ms per request |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	if diffTargets > 0 {
		return b.diffRows(diffTargets, per)
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-targets: %w", err)
		}
		if err := b.size(n, per); err != nil {
			return err
		}
	}
	return b.helmBaseline(helmTargets, per)
}

type bench struct {
	solar, work, skip string
	// memLimit, when set, is a GOMEMLIMIT the no-op rows are run again with.
	memLimit string
	// env is added to solar's environment for a row.
	env []string
	// key is the signing key's file with -sign.
	key string
	// regs are the registries publish measures, each behind its proxy; the
	// first also serves the helm baseline.
	regs []*registry
	// cold is the last cold publish: its wall time, Targets and charts, for
	// the ratio to the helm baseline.
	cold struct {
		wall            time.Duration
		targets, charts int
	}
}

// size runs every step at n Targets.
func (b *bench) size(n, per int) error {
	// The input names the registry (its proxy) it is published to: one tree
	// and one changed tree per registry.
	var trees, changes []string
	for i, reg := range b.regs {
		dir := filepath.Join(b.work, fmt.Sprintf("t%d", n), fmt.Sprintf("registry-%d", i))
		tree, changed := filepath.Join(dir, "tree"), filepath.Join(dir, "changed")
		for _, g := range []struct {
			dir    string
			change string
		}{{tree, "0"}, {changed, "1"}} {
			out, err := exec.Command("go", "run", "./scripts/genobjects", "-targets", fmt.Sprint(n), "-per", fmt.Sprint(per),
				"-registry", reg.proxy.Host, "-change", g.change, "-out", g.dir).CombinedOutput()
			if err != nil {
				return fmt.Errorf("genobjects: %v\n%s", err, out)
			}
		}
		trees, changes = append(trees, tree), append(changes, changed)
	}
	dir := filepath.Join(b.work, fmt.Sprintf("t%d", n))
	tree, changed := trees[0], changes[0]
	// Each step starts with an empty cache of its own: cold is cold.
	if !strings.Contains(b.skip, "vet") {
		cache := filepath.Join(dir, "cache-vet")
		b.row(n, b.regs[0], "vet", "cold (no cache)", "vet", "--cache-dir", "", tree)
		b.row(n, b.regs[0], "vet", "first, filling the cache", "vet", "--cache-dir", cache, tree)
		b.row(n, b.regs[0], "vet", "again (cache)", "vet", "--cache-dir", cache, tree)
	}
	if !strings.Contains(b.skip, "render") {
		out := filepath.Join(dir, "out")
		render := []string{"render", "--no-credentials", "--cache-dir", filepath.Join(dir, "cache-render"), "--out", out}
		b.row(n, b.regs[0], "render", "cold", append(render, tree)...)
		b.row(n, b.regs[0], "render", "no-op", append(render, tree)...)
		b.limited(n, b.regs[0], "render", "no-op", append(render, tree)...)
		if !strings.Contains(b.skip, "full") {
			b.row(n, b.regs[0], "render", "no-op, --full (every repository asked)", append(render, "--full", tree)...)
		}
		b.row(n, b.regs[0], "render", "1 % changed", append(render, changed)...)
		if !strings.Contains(b.skip, "verify") {
			b.row(n, b.regs[0], "verify", "layout (every blob hashed)", "verify", "--out", out)
		}
		if b.key != "" {
			render := []string{"render", "--no-credentials", "--cache-dir", filepath.Join(dir, "cache-render-signed"), "--out", out + "-signed", "--signing-key", b.key}
			b.row(n, b.regs[0], "render", "cold, signed", append(render, tree)...)
			b.row(n, b.regs[0], "render", "no-op, signed", append(render, tree)...)
			b.row(n, b.regs[0], "render", "1 % changed, signed", append(render, changed)...)
		}
	}
	if !strings.Contains(b.skip, "publish") {
		for i, reg := range b.regs {
			publish := []string{"publish", "--no-credentials", "--cache-dir", filepath.Join(dir, fmt.Sprintf("cache-publish-%d", i)), "--plain-http", "--registry", reg.proxy.Host + "/bench" + fmt.Sprint(n)}
			if reg.password != "" {
				publish = append(publish, "--username", "bench", "--password-stdin")
			}
			label := ""
			if len(b.regs) > 1 {
				label = ", " + reg.name
			}
			b.row(n, reg, "publish", "cold"+label, append(publish, trees[i])...)
			b.row(n, reg, "publish", "no-op"+label, append(publish, trees[i])...)
			b.limited(n, reg, "publish", "no-op"+label, append(publish, trees[i])...)
			if !strings.Contains(b.skip, "full") {
				// The protocol before the namespace index: every
				// repository asked (its tags, its latest manifest).
				b.row(n, reg, "publish", "no-op, --full (every repository asked)"+label, append(publish, "--full", trees[i])...)
			}
			b.row(n, reg, "publish", "1 % changed"+label, append(publish, changes[i])...)
			if b.key != "" {
				// The same input into repositories of their own, signed.
				signed := slices.Clone(publish)
				signed[slices.Index(signed, "--registry")+1] += "-signed"
				signed[slices.Index(signed, "--cache-dir")+1] += "-signed"
				signed = append(signed, "--signing-key", b.key)
				b.row(n, reg, "publish", "cold, signed"+label, append(signed, trees[i])...)
				b.row(n, reg, "publish", "no-op, signed"+label, append(signed, trees[i])...)
				b.row(n, reg, "publish", "1 % changed, signed"+label, append(signed, changes[i])...)
			}
			if !strings.Contains(b.skip, "verify") {
				verify := []string{"verify", "--plain-http", "--registry", reg.proxy.Host + "/bench" + fmt.Sprint(n)}
				if reg.password != "" {
					verify = append(verify, "--username", "bench", "--password-stdin")
				}
				b.row(n, reg, "verify", "registry (sizes by HEAD)"+label, verify...)
				b.row(n, reg, "verify", "registry --deep (every blob hashed)"+label, append(verify, "--deep")...)
			}
		}
	}
	return nil
}

// The summary line of render and publish; a count of one is singular.
var summary = regexp.MustCompile(`(\d+) Targets?: (\d+) charts? created, (\d+) updated, (\d+) unchanged`)

// limited is row again with GOMEMLIMIT=memLimit, when one is set.
func (b *bench) limited(n int, reg *registry, step, what string, args ...string) {
	if b.memLimit == "" {
		return
	}
	b.env = []string{"GOMEMLIMIT=" + b.memLimit}
	defer func() { b.env = nil }()
	b.row(n, reg, step, what+", GOMEMLIMIT="+b.memLimit, args...)
}

// row runs solar once against reg, prints its line of the table and
// returns its wall time.
func (b *bench) row(n int, reg *registry, step, what string, args ...string) time.Duration {
	reg.proxy.Take()
	cpu0 := reg.cpu()
	cmd := exec.Command(b.solar, args...)
	cmd.Env = append(os.Environ(), b.env...)
	cmd.Stdin = strings.NewReader(reg.password + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: solar %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String()))
	}
	regCPU := reg.cpu() - cpu0
	requests := reg.proxy.Take()
	st := cmd.ProcessState
	ru, _ := st.SysUsage().(*syscall.Rusage)
	rss := 0.0
	if ru != nil {
		rss = float64(ru.Maxrss) / 1024
	}
	charts, perNew, perUnchanged := "", "", ""
	if m := summary.FindStringSubmatch(stdout.String() + stderr.String()); m != nil {
		targets, _ := strconv.Atoi(m[1])
		created, _ := strconv.Atoi(m[2])
		updated, _ := strconv.Atoi(m[3])
		unchanged, _ := strconv.Atoi(m[4])
		charts = fmt.Sprintf("%d / %d", created+updated, unchanged)
		if step == "publish" && created+updated > 0 && unchanged == 0 {
			perNew = fmt.Sprintf("%.1f", float64(len(requests))/float64(created+updated))
		}
		if step == "publish" && what == "cold" && reg == b.regs[0] {
			b.cold.wall, b.cold.targets, b.cold.charts = wall, targets, created+updated
		}
		if step == "publish" && created+updated == 0 && targets > 0 {
			perUnchanged = fmt.Sprintf("%.2f", float64(len(requests))/float64(targets))
		}
	}
	reqs, perRequest := "", ""
	if step == "publish" || (step == "verify" && len(requests) > 0) {
		reqs = fmt.Sprintf("%d (%d writes)", len(requests), countproxy.Writes(requests))
		if len(requests) > 0 {
			perRequest = fmt.Sprintf("%.2f", regCPU.Seconds()*1000/float64(len(requests)))
		}
	}
	fmt.Printf("| %d | %s | %s | %.2f | %.2f | %.2f | %.0f | %s | %s | %s | %s | %s |\n", n, step, what, wall.Seconds(),
		(st.UserTime() + st.SystemTime()).Seconds(), regCPU.Seconds(), rss, charts, reqs, perNew, perUnchanged, perRequest)
	return wall
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// registry is a registry scripts/start-registry.sh runs (bin, with the same
// config whatever the binary), and the counting proxy in front of it.
type registry struct {
	cmd      *exec.Cmd
	name     string
	host     string
	password string
	proxy    *countproxy.Proxy
}

// startRegistry starts the registry binary bin with its storage, config and
// log in dir.
func startRegistry(dir string, auth bool, bin string) (*registry, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &registry{host: fmt.Sprintf("127.0.0.1:%d", port), password: fmt.Sprintf("bench-%d", time.Now().UnixNano())}
	r.cmd = exec.Command("bash", "scripts/start-registry.sh", filepath.Join(dir, "registry"), fmt.Sprint(port))
	r.cmd.Env = append(os.Environ(), "REGISTRY_USER=bench", "REGISTRY_PASSWORD="+r.password, "REGISTRY_BIN="+bin)
	if !auth {
		r.cmd.Env, r.password = append(r.cmd.Env, "REGISTRY_AUTH=none"), ""
	}
	// The registry logs every 404 (an absent blob) as an error: into a file.
	logs, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		return nil, err
	}
	r.cmd.Stdout, r.cmd.Stderr = logs, logs
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + r.host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized || !auth && resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
	}
	r.stop()
	return nil, fmt.Errorf("the registry %s on %s did not answer within 30 s (its log: %s)", bin, r.host, filepath.Join(dir, "registry.log"))
}

func (r *registry) stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}

// cpu is the registry's CPU time so far (user + system, /proc/PID/stat).
func (r *registry) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeKey writes a new Ed25519 signing key (PKCS #8 PEM) into dir.
func writeKey(dir string) (string, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, "signing.key")
	return name, os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}
