package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// diffRows measures solar diff of n Targets after one values change of a
// Release every Target gets (genobjects -change-release: its release chart
// and every bootstrap chart change), beside render --dry-run of the same
// change, in the same run and with the same flags: the layout holds the tree
// rendered before. The application chart, helm create's, is in a registry
// of its own that answers anonymously (as an OCIRepository without secretRef
// reads it), so that diff renders all three levels of each Target's chain;
// the row --no-app-charts renders two.
func (b *bench) diffRows(n, per int) error {
	helm, err := exec.LookPath("helm")
	if err != nil {
		return fmt.Errorf("the diff rows need helm (scripts/install-tools.sh): %w", err)
	}
	bin, err := exec.LookPath("registry")
	if err != nil {
		return fmt.Errorf("the diff rows need registry (scripts/install-tools.sh): %w", err)
	}
	dir := filepath.Join(b.work, fmt.Sprintf("diff%d", n))
	apps, err := startRegistry(filepath.Join(dir, "apps"), false, bin)
	if err != nil {
		return err
	}
	defer apps.stop()
	env := append(os.Environ(), "HELM_REGISTRY_CONFIG="+filepath.Join(dir, "registry.json"), "HELM_CACHE_HOME="+filepath.Join(dir, "helm-cache"))
	for _, args := range [][]string{
		{"create", filepath.Join(dir, "app")},
		{"package", filepath.Join(dir, "app"), "--version", "1.0.0", "-d", dir},
		{"push", filepath.Join(dir, "app-1.0.0.tgz"), "oci://" + apps.host + "/charts", "--plain-http"},
	} {
		cmd := exec.Command(helm, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	tree, changed, layout := filepath.Join(dir, "tree"), filepath.Join(dir, "changed"), filepath.Join(dir, "out")
	for _, g := range [][]string{{"-out", tree}, {"-out", changed, "-change-release"}} {
		args := append([]string{"run", "./scripts/genobjects", "-targets", fmt.Sprint(n), "-per", fmt.Sprint(per), "-app-registry", apps.host}, g...)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("genobjects: %v\n%s", err, out)
		}
	}
	flags := []string{"--no-credentials", "--cache-dir", filepath.Join(dir, "cache"), "--out", layout}
	if out, err := exec.Command(b.solar, append(append([]string{"render", "-q"}, flags...), tree)...).CombinedOutput(); err != nil {
		return fmt.Errorf("rendering the tree before the change: %v\n%s", err, out)
	}
	reg := b.regs[0]
	render := b.row(n, reg, "render --dry-run", "a values change every Target gets", append(append([]string{"render", "--dry-run"}, flags...), changed)...)
	var ratios []string
	for _, r := range []struct {
		what string
		args []string
	}{
		{"objects, 3 levels", nil},
		{"objects, --no-app-charts", []string{"--no-app-charts"}},
		{"--files", []string{"--files"}},
	} {
		wall := b.row(n, reg, "diff", "the same change: "+r.what, append(append(append([]string{"diff"}, r.args...), flags...), changed)...)
		ratios = append(ratios, fmt.Sprintf("diff (%s) / render --dry-run: %.2f", r.what, ratio(wall, render)))
	}
	fmt.Printf("\n%s\n", strings.Join(ratios, "\n"))
	return nil
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return a.Seconds() / b.Seconds()
}
