package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

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
	reg := b.regs[0]
	dir := filepath.Join(b.work, "helm")
	tree, out := filepath.Join(dir, "tree"), filepath.Join(dir, "out")
	if out, err := exec.Command("go", "run", "./scripts/genobjects", "-targets", fmt.Sprint(targets), "-per", fmt.Sprint(min(per, targets)),
		"-registry", reg.proxy.Host, "-out", tree).CombinedOutput(); err != nil {
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
	if reg.password != "" {
		login := exec.Command(helm, "registry", "login", reg.proxy.Host, "--username", "bench", "--password-stdin", "--plain-http")
		login.Env, login.Stdin = env, strings.NewReader(reg.password)
		if out, err := login.CombinedOutput(); err != nil {
			return fmt.Errorf("helm registry login: %v\n%s", err, out)
		}
	}
	reg.proxy.Take()
	cpu0 := reg.cpu()
	start := time.Now()
	charts := 0
	for i, bs := range bootstraps {
		for _, c := range append([]string{bs}, releases...) {
			pkg := filepath.Join(dir, "pkg", fmt.Sprint(i))
			for _, args := range [][]string{
				{"package", c, "-d", pkg},
				{"push", filepath.Join(pkg, filepath.Base(c)+"-"+chartVersion(c)+".tgz"), fmt.Sprintf("oci://%s/helm/t%d", reg.proxy.Host, i), "--plain-http"},
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
	regCPU := reg.cpu() - cpu0
	requests := reg.proxy.Take()
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
