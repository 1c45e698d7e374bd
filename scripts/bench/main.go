// Command bench measures what users run, end to end, in one go: solar vet,
// render into the layout and publish to a real registry (Debian's
// docker-registry on 127.0.0.1, configured as its docs recommend, behind a
// counting proxy), cold, no-op and after a 1 % change, at each size of
// -targets; and, beside it, the loop users would write instead (helm package +
// helm push per chart) against the same registry. It prints one Markdown table
// (docs/benchmarks.md). scripts/bench.sh runs it; by hand:
//
//	go run ./scripts/bench -solar bin/solar -targets 100,1000 [-per 100] [-helm 10]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/solar-pipeline/solar/internal/countproxy"
)

func main() {
	solar := flag.String("solar", "bin/solar", "the solar binary")
	sizes := flag.String("targets", "100,1000", "comma-separated numbers of Targets")
	per := flag.Int("per", 100, "Targets per namespace")
	helmTargets := flag.Int("helm", 10, "Targets the helm package + helm push baseline delivers")
	skip := flag.String("skip", "", "comma-separated steps to leave out: vet, render, publish")
	auth := flag.Bool("auth", true, "the registry asks for basic auth (htpasswd, bcrypt), as the tests' does; false: none, to see the cost of auth")
	flag.Parse()
	if err := run(*solar, *sizes, *per, *helmTargets, *skip, *auth); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(solar, sizes string, per, helmTargets int, skip string, auth bool) error {
	work, err := os.MkdirTemp("", "solar-bench-")
	if err != nil {
		return err
	}
	// Deleted at the end only: ext4 allocates inodes slowly for a while after
	// many were freed, which would slow the next step.
	defer os.RemoveAll(work)
	reg, err := startRegistry(work, auth)
	if err != nil {
		return err
	}
	defer reg.stop()
	proxy, err := countproxy.Start(reg.host)
	if err != nil {
		return err
	}
	defer proxy.Close()
	b := &bench{solar: solar, reg: reg, proxy: proxy, work: work, skip: skip}
	fmt.Printf("| Targets | step | run | wall s | solar CPU s | registry CPU s | peak RSS MB | charts new/unchanged | requests | per new chart | per unchanged Target |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|\n")
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
	reg               *registry
	proxy             *countproxy.Proxy
	// cold is the last cold publish: its wall time, Targets and charts, for
	// the ratio to the helm baseline.
	cold struct {
		wall            time.Duration
		targets, charts int
	}
}

// size runs every step at n Targets.
func (b *bench) size(n, per int) error {
	dir := filepath.Join(b.work, fmt.Sprintf("t%d", n))
	tree, changed := filepath.Join(dir, "tree"), filepath.Join(dir, "changed")
	for _, g := range []struct {
		dir    string
		change string
	}{{tree, "0"}, {changed, "1"}} {
		out, err := exec.Command("go", "run", "./scripts/genobjects", "-targets", fmt.Sprint(n), "-per", fmt.Sprint(per),
			"-registry", b.proxy.Host, "-change", g.change, "-out", g.dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("genobjects: %v\n%s", err, out)
		}
	}
	// Each step starts with an empty cache of its own: cold is cold.
	if !strings.Contains(b.skip, "vet") {
		cache := filepath.Join(dir, "cache-vet")
		b.row(n, "vet", "cold (no cache)", "vet", "--cache-dir", "", tree)
		b.row(n, "vet", "first, filling the cache", "vet", "--cache-dir", cache, tree)
		b.row(n, "vet", "again (cache)", "vet", "--cache-dir", cache, tree)
	}
	if !strings.Contains(b.skip, "render") {
		out := filepath.Join(dir, "out")
		render := []string{"render", "--no-credentials", "--cache-dir", filepath.Join(dir, "cache-render"), "--out", out}
		b.row(n, "render", "cold", append(render, tree)...)
		b.row(n, "render", "no-op", append(render, tree)...)
		b.row(n, "render", "1 % changed", append(render, changed)...)
	}
	if !strings.Contains(b.skip, "publish") {
		publish := []string{"publish", "--no-credentials", "--cache-dir", filepath.Join(dir, "cache-publish"), "--plain-http", "--registry", b.proxy.Host + "/bench" + fmt.Sprint(n)}
		if b.reg.password != "" {
			publish = append(publish, "--username", "bench", "--password-stdin")
		}
		b.row(n, "publish", "cold", append(publish, tree)...)
		b.row(n, "publish", "no-op", append(publish, tree)...)
		b.row(n, "publish", "1 % changed", append(publish, changed)...)
	}
	return nil
}

var summary = regexp.MustCompile(`(\d+) Targets: (\d+) charts created, (\d+) updated, (\d+) unchanged`)

// row runs solar once and prints its line of the table.
func (b *bench) row(n int, step, what string, args ...string) {
	b.proxy.Take()
	cpu0 := b.reg.cpu()
	cmd := exec.Command(b.solar, args...)
	cmd.Stdin = strings.NewReader(b.reg.password + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: solar %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String()))
	}
	regCPU := b.reg.cpu() - cpu0
	requests := b.proxy.Take()
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
		if step == "publish" && what == "cold" {
			b.cold.wall, b.cold.targets, b.cold.charts = wall, targets, created+updated
		}
		if step == "publish" && created+updated == 0 && targets > 0 {
			perUnchanged = fmt.Sprintf("%.2f", float64(len(requests))/float64(targets))
		}
	}
	reqs := ""
	if step == "publish" {
		reqs = fmt.Sprintf("%d (%d writes)", len(requests), countproxy.Writes(requests))
	}
	fmt.Printf("| %d | %s | %s | %.2f | %.2f | %.2f | %.0f | %s | %s | %s | %s |\n", n, step, what, wall.Seconds(),
		(st.UserTime() + st.SystemTime()).Seconds(), regCPU.Seconds(), rss, charts, reqs, perNew, perUnchanged)
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// registry is the docker-registry scripts/start-registry.sh runs.
type registry struct {
	cmd      *exec.Cmd
	host     string
	password string
}

func startRegistry(work string, auth bool) (*registry, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &registry{host: fmt.Sprintf("127.0.0.1:%d", port), password: fmt.Sprintf("bench-%d", time.Now().UnixNano())}
	r.cmd = exec.Command("bash", "scripts/start-registry.sh", filepath.Join(work, "registry"), fmt.Sprint(port))
	r.cmd.Env = append(os.Environ(), "REGISTRY_USER=bench", "REGISTRY_PASSWORD="+r.password)
	if !auth {
		r.cmd.Env, r.password = append(r.cmd.Env, "REGISTRY_AUTH=none"), ""
	}
	// The registry logs every 404 (an absent blob) as an error: into a file.
	logs, err := os.Create(filepath.Join(work, "registry.log"))
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
	return nil, fmt.Errorf("the registry on %s did not answer within 30 s", r.host)
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

// helmBaseline delivers what solar publishes for targets Targets, a bootstrap
// chart and its 5 release charts per Target, the way a hand-rolled CI job
// does: helm package of each chart folder, then helm push, one process each.
// The chart folders are solar's own charts, unpacked beforehand.
func (b *bench) helmBaseline(targets, per int) error {
	if targets == 0 {
		return nil
	}
	helm, err := exec.LookPath("helm")
	if err != nil {
		return fmt.Errorf("the helm baseline needs helm (scripts/install-tools.sh): %w", err)
	}
	dir := filepath.Join(b.work, "helm")
	tree, out := filepath.Join(dir, "tree"), filepath.Join(dir, "out")
	if out, err := exec.Command("go", "run", "./scripts/genobjects", "-targets", fmt.Sprint(targets), "-per", fmt.Sprint(min(per, targets)),
		"-registry", b.proxy.Host, "-out", tree).CombinedOutput(); err != nil {
		return fmt.Errorf("genobjects: %v\n%s", err, out)
	}
	if out, err := exec.Command(b.solar, "render", "-q", "--no-credentials", "--out", out, tree).CombinedOutput(); err != nil {
		return fmt.Errorf("rendering the baseline's charts: %v\n%s", err, out)
	}
	bootstraps, releases, err := unpackCharts(out, filepath.Join(dir, "charts"))
	if err != nil {
		return err
	}
	env := append(os.Environ(), "HELM_REGISTRY_CONFIG="+filepath.Join(dir, "registry.json"), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"))
	if b.reg.password != "" {
		login := exec.Command(helm, "registry", "login", b.proxy.Host, "--username", "bench", "--password-stdin", "--insecure")
		login.Env, login.Stdin = env, strings.NewReader(b.reg.password)
		if out, err := login.CombinedOutput(); err != nil {
			return fmt.Errorf("helm registry login: %v\n%s", err, out)
		}
	}
	b.proxy.Take()
	cpu0 := b.reg.cpu()
	start := time.Now()
	charts := 0
	for i, bs := range bootstraps {
		for _, c := range append([]string{bs}, releases...) {
			pkg := filepath.Join(dir, "pkg", fmt.Sprint(i))
			for _, args := range [][]string{
				{"package", c, "-d", pkg},
				{"push", filepath.Join(pkg, filepath.Base(c)+"-"+chartVersion(c)+".tgz"), fmt.Sprintf("oci://%s/helm/t%d", b.proxy.Host, i), "--plain-http"},
			} {
				cmd := exec.Command(helm, args...)
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			charts++
		}
	}
	wall := time.Since(start)
	regCPU := b.reg.cpu() - cpu0
	requests := b.proxy.Take()
	fmt.Printf("\nbaseline, helm package + helm push per chart (%d Targets, %d charts): %.2f s, %.1f ms per chart, %.0f ms per Target; registry CPU %.2f s; %d requests (%.1f per chart)\n",
		len(bootstraps), charts, wall.Seconds(), wall.Seconds()*1000/float64(charts), wall.Seconds()*1000/float64(len(bootstraps)),
		regCPU.Seconds(), len(requests), float64(len(requests))/float64(charts))
	if b.cold.targets > 0 {
		solarTarget := b.cold.wall.Seconds() / float64(b.cold.targets)
		solarChart := b.cold.wall.Seconds() / float64(b.cold.charts)
		fmt.Printf("solar publish, cold, %d Targets: %.1f ms per Target, %.1f ms per chart; ratio helm/solar per Target %.0f×, per chart %.1f×\n",
			b.cold.targets, solarTarget*1000, solarChart*1000,
			wall.Seconds()/float64(len(bootstraps))/solarTarget, wall.Seconds()/float64(charts)/solarChart)
	}
	return nil
}

// unpackCharts unpacks every chart archive of the layout out into dir and
// returns the folders of the bootstrap charts and of the release charts.
func unpackCharts(out, dir string) (bootstraps, releases []string, err error) {
	i := 0
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(p)) != "sha256" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			return err // not a gzip archive: a config or a manifest
		}
		i++
		to := filepath.Join(dir, fmt.Sprint(i))
		if err := os.MkdirAll(to, 0o755); err != nil {
			return err
		}
		if out, err := exec.Command("tar", "-xzf", p, "-C", to).CombinedOutput(); err != nil {
			return fmt.Errorf("unpacking %s: %v\n%s", p, err, out)
		}
		entries, err := os.ReadDir(to)
		if err != nil || len(entries) != 1 {
			return fmt.Errorf("chart archive %s: want one folder: %v", p, err)
		}
		chart := filepath.Join(to, entries[0].Name())
		if strings.HasPrefix(entries[0].Name(), "bootstrap-") {
			bootstraps = append(bootstraps, chart)
		} else {
			releases = append(releases, chart)
		}
		return nil
	})
	if err == nil && (len(bootstraps) == 0 || len(releases) == 0) {
		err = fmt.Errorf("no charts in %s", out)
	}
	return bootstraps, releases, err
}

var versionLine = regexp.MustCompile(`(?m)^version: *"?([^"\s]+)`)

// chartVersion reads the version of the chart folder c.
func chartVersion(c string) string {
	b, _ := os.ReadFile(filepath.Join(c, "Chart.yaml"))
	if m := versionLine.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}
