package imagebuild_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/imagebuild"
)

// goVersionM is what `go version -m` says of a binary: its Go version and
// each linked module as path@version (a module replaced by a module as its
// replacement, a module replaced by a directory as its path alone).
func goVersionM(t *testing.T, binary string) (goVersion string, modules []string) {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", binary).Output()
	require.NoError(t, err)
	lines := strings.Split(string(out), "\n")
	_, goVersion, _ = strings.Cut(lines[0], ": ")
	for _, l := range lines[1:] {
		f := strings.Split(strings.TrimSpace(l), "\t")
		switch {
		case len(f) >= 3 && f[0] == "dep":
			modules = append(modules, f[1]+"@"+f[2])
		case len(f) >= 3 && f[0] == "=>" && f[2] != "(devel)": // replaced by a module
			modules[len(modules)-1] = f[1] + "@" + f[2]
		case len(f) >= 2 && f[0] == "=>": // replaced by a directory: the path, no version
			dep, _, _ := strings.Cut(modules[len(modules)-1], "@")
			modules[len(modules)-1] = dep
		}
	}
	return goVersion, modules
}

// withDeps is a main module linking a module from the module cache (its
// go.sum lines are Solar's) and a local module through a replace directive.
var withDeps = map[string]string{
	"go.mod": `module example.com/withdeps

go 1.26

require (
	github.com/Masterminds/semver/v3 v3.5.0
	example.com/local v0.1.0
)

replace example.com/local => ./local
`,
	"main.go": `package main

import (
	"fmt"

	"example.com/local"
	"github.com/Masterminds/semver/v3"
)

func main() { fmt.Println(semver.MustParse(local.Version)) }
`,
	"local/go.mod":   "module example.com/local\n\ngo 1.26\n",
	"local/local.go": "package local\n\nconst Version = \"1.0.0\"\n",
}

func writeWithDeps(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sum, err := os.ReadFile("../../go.sum")
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(sum), "\n") {
		if strings.HasPrefix(l, "github.com/Masterminds/semver/v3 v3.5.0") {
			lines = append(lines, l)
		}
	}
	files := maps.Clone(withDeps)
	files["go.sum"] = strings.Join(lines, "\n") + "\n"
	for f, s := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644))
	}
	return dir
}

// The SBOM of a built binary lists the modules and versions `go version -m`
// shows of it, a replaced module as what replaced it.
func TestSBOMListsWhatGoVersionShows(t *testing.T) {
	bins := t.TempDir()
	o := imagebuild.Options{Dir: writeWithDeps(t), Package: ".", Name: "withdeps", BinDir: bins,
		Platforms: []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}}}
	t.Setenv("GOPROXY", "off") // the module is in the cache: no network
	res, err := imagebuild.Build(context.Background(), o)
	require.NoError(t, err)
	bin := filepath.Join(bins, "linux_"+runtime.GOARCH, "withdeps")
	goVersion, want := goVersionM(t, bin)
	require.Len(t, want, 2)

	var bom cdx.BOM
	require.NoError(t, json.Unmarshal(res.Images[0].SBOM, &bom))
	assert.Equal(t, "CycloneDX", bom.BOMFormat)
	assert.Equal(t, "example.com/withdeps", bom.Metadata.Component.Name)
	var got []string
	for _, c := range *bom.Components {
		if c.Name == "stdlib" {
			assert.Equal(t, goVersion, c.Version)
			continue
		}
		got = append(got, strings.TrimSuffix(c.Name+"@"+c.Version, "@"))
	}
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got)

	again, err := imagebuild.SBOM(bin)
	require.NoError(t, err)
	assert.Equal(t, string(res.Images[0].SBOM), string(again), "the SBOM of the same binary differs")
}
