// Package buildinfo says which build of solar runs: the module version (or
// what -ldflags "-X .../buildinfo.version=..." set), the VCS commit (or what
// "-X .../buildinfo.commit=..." set) and the
// Go version, from the binary's own build information.
package buildinfo

import (
	"cmp"
	"fmt"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X github.com/solar-pipeline/solar/internal/buildinfo.version=v1.2.3".
var version = ""

// commit is set at build time with -ldflags "-X .../buildinfo.commit=SHA" by
// builds without VCS stamping: Solar's images (internal/imagebuild) are built
// with -buildvcs=false, so that a checkout's state does not change the binary.
var commit = ""

// Info is a build of a solar binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
}

// Read returns the binary's build information.
func Read() Info {
	info := Info{Version: version, Commit: cmp.Or(commit, "unknown"), GoVersion: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if info.Version == "" {
			info.Version = "unknown"
		}
		return info
	}
	info.GoVersion = bi.GoVersion
	if info.Version == "" {
		info.Version = bi.Main.Version // "(devel)" in a checkout build
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				info.Commit += "-dirty"
			}
		}
	}
	return info
}

func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, i.Commit, i.GoVersion)
}
