package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

const module = "github.com/solar-pipeline/solar/"

// packages are the module's packages (tests aside) with their direct
// imports and all they link, by path relative to the module.
type packages map[string]struct{ imports, deps []string }

func listPackages(t *testing.T) packages {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
	cmd.Dir = testenv.Root(t)
	out, err := cmd.Output()
	require.NoError(t, err)
	pkgs := packages{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		pkgs[strings.TrimPrefix(f[0], module)] = struct{ imports, deps []string }{ours(f[1]), ours(f[2])}
	}
	return pkgs
}

// allDeps is all that the module's package pkg links, its own and others'.
func allDeps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{join .Deps \"\\n\"}}", "./"+pkg)
	cmd.Dir = testenv.Root(t)
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.Fields(string(out))
}

// ours is the module's packages among the space-separated paths.
func ours(paths string) []string {
	var out []string
	for _, p := range strings.Fields(paths) {
		if strings.HasPrefix(p, module) {
			out = append(out, strings.TrimPrefix(p, module))
		}
	}
	return out
}

// TestArchitecture holds the rules docs/architecture.md states about who
// imports whom: a change that breaks one fails here, naming the rule.
func TestArchitecture(t *testing.T) {
	pkgs := listPackages(t)
	under := func(prefix string) []string {
		var out []string
		for p := range pkgs {
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				out = append(out, p)
			}
		}
		slices.Sort(out)
		return out
	}
	// The CLI parses flags, calls the line and prints: it reaches the stages
	// of the line (load, validate, resolve, chain, credential) only through
	// pipeline, and names the types of what it prints where they are
	// declared (pipeline re-exports nothing).
	cli := []string{"api", "controller", "device/wire", "internal/buildinfo", "internal/english",
		"renderer/archive", "renderer/artifacts", "renderer/chart", "renderer/diag", "renderer/fleet", "renderer/fleetkv",
		"renderer/objdiff", "renderer/pipeline", "renderer/publish", "renderer/published", "renderer/reviewed",
		"renderer/rollout", "renderer/rolloutstore", "renderer/sign", "renderer/sitereport", "renderer/status", "renderer/store", "renderer/verify", "ui"}
	for _, imp := range pkgs["cmd/solar"].imports {
		assert.Contains(t, cli, imp, "cmd/solar imports %s: the CLI imports only %v", imp, cli)
	}
	// The vocabulary imports nothing of the module but itself.
	for _, p := range under("api") {
		for _, d := range pkgs[p].deps {
			assert.True(t, d == "api", "%s links %s: the vocabulary links nothing of the module", p, d)
		}
	}
	// The version protocol knows no chart, chain or resolution.
	for _, d := range pkgs["renderer/publish"].deps {
		assert.Contains(t, []string{"api", "internal/cachefile", "internal/capool", "internal/killpoint", "internal/settle", "renderer/sign", "renderer/store"}, d,
			"renderer/publish links %s: publish knows no chart, chain, resolution or pipeline", d)
	}
	// The verbs beside the line read back what it published: they link
	// neither pipeline nor the stages that validate and resolve the input.
	for _, p := range []string{"renderer/published", "renderer/reviewed", "renderer/rolloutstore", "renderer/sitereport", "renderer/status", "renderer/verify", "ui"} {
		for _, d := range pkgs[p].deps {
			assert.NotContains(t, []string{"renderer/pipeline", "renderer/validate", "renderer/resolve"}, d,
				"%s links %s: the verbs beside the line read the store, not the line", p, d)
		}
	}
	// The fleet's planner is pure: it links nothing of NATS (fleetkv is the
	// bucket's client).
	for _, d := range allDeps(t, "renderer/fleet") {
		assert.False(t, strings.HasPrefix(d, "github.com/nats-io/"),
			"renderer/fleet links %s: the fleet's planner links nothing of NATS (renderer/fleetkv does)", d)
	}
	// The rollout engine is pure: nothing of the module, no HTTP, no
	// Kubernetes client.
	for _, d := range allDeps(t, "renderer/rollout") {
		assert.False(t, strings.HasPrefix(d, module) || d == "net/http" || strings.HasPrefix(d, "k8s.io/client-go"),
			"renderer/rollout links %s: the rollout engine does no I/O", d)
	}
	// The store knows no protocol: nothing of renderer/ but the signatures
	// it keeps beside the versions.
	for _, d := range pkgs["renderer/store"].deps {
		assert.Contains(t, []string{"api", "internal/capool", "internal/killpoint", "internal/settle", "renderer/sign"}, d,
			"renderer/store links %s: the store knows no publish protocol, chart, chain, resolution or pipeline", d)
	}
	// The device side links nothing of the pipeline, the controller or the callout.
	for _, p := range under("device") {
		for _, d := range pkgs[p].deps {
			assert.False(t, strings.HasPrefix(d, "renderer/") || d == "controller" || d == "callout",
				"%s links %s: device/ links nothing of renderer/, controller or callout", p, d)
		}
	}
	// An agent embeds the link and the wire without the root updater.
	for _, p := range []string{"device/agentlink", "device/wire"} {
		assert.NotContains(t, pkgs[p].deps, "device/updater",
			"%s links device/updater: the agent's side speaks to the updater through device/wire", p)
	}
	// The line runs below its front ends: nothing of renderer/ or internal/
	// imports the CLI, the controller, the callout, the UI or a command.
	for p, pkg := range pkgs {
		if !strings.HasPrefix(p, "renderer/") && !strings.HasPrefix(p, "internal/") {
			continue
		}
		for _, d := range pkg.deps {
			assert.False(t, strings.HasPrefix(d, "cmd/") || d == "controller" || d == "callout" || d == "ui",
				"%s links %s: the line does not import its front ends", p, d)
		}
	}
	// Nothing that ships links the test kit.
	for p, pkg := range pkgs {
		if strings.HasPrefix(p, "internal/testkit") || strings.HasPrefix(p, "scripts/") {
			continue
		}
		for _, d := range pkg.deps {
			assert.False(t, strings.HasPrefix(d, "internal/testkit"), "%s links %s: the test kit is for tests", p, d)
		}
	}
}

// TestOnlyAPIDeclaresTheVocabulary: the API group and every media type are
// written in api/ alone (tests aside, which may spell out what they expect).
func TestOnlyAPIDeclaresTheVocabulary(t *testing.T) {
	sources(t, []string{"api", "internal/testkit"}, func(rel, text string) {
		for _, word := range []string{`"solar.opendefense.cloud`, `"v1alpha1"`, `"application/vnd.`} {
			assert.NotContains(t, text, word, "%s declares %s…: the vocabulary lives in api/", rel, word)
		}
	})
}

// sources calls visit with every Go file of the module but tests, by its
// path relative to the module, except those under the folders skip names.
func sources(t *testing.T, skip []string, visit func(rel, text string)) {
	t.Helper()
	root := testenv.Root(t)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || rel == "out" || slices.Contains(skip, rel)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil {
			visit(rel, string(b))
		}
		return err
	})
	require.NoError(t, err)
}

// TestEveryPackageHasADoc: go doc of any package says what it is.
func TestEveryPackageHasADoc(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{.Name}}|{{.Doc}}", "./...")
	cmd.Dir = testenv.Root(t)
	out, err := cmd.Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 3)
		if !assert.NotEmpty(t, f[2], "%s has no package doc", f[0]) || f[1] == "main" {
			continue
		}
		assert.True(t, strings.HasPrefix(f[2], "Package "+f[1]+" "), "%s: its doc begins %q, not \"Package %s \"", f[0], f[2], f[1])
	}
}

// reExport is an exported name declared as another package's exported
// name: type X = pkg.Y, or X = pkg.Y in a var or const declaration.
var reExport = regexp.MustCompile(`(?m)^(?:type |var |const |\t)([A-Z]\w*)\s+=\s+[a-z]\w*\.[A-Z]\w*\s*(?://.*)?$`)

// TestNoReExports: each name is declared once, where it belongs; a package
// does not hand on another's names (a caller imports that package).
func TestNoReExports(t *testing.T) {
	sources(t, nil, func(rel, text string) {
		for _, m := range reExport.FindAllStringSubmatch(text, -1) {
			assert.Fail(t, "a re-export", "%s: %s: %s is another package's name: use that package", rel, strings.TrimSpace(m[0]), m[1])
		}
	})
}
