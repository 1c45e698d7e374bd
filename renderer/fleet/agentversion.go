package fleet

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"maps"
	"slices"

	"github.com/solar-pipeline/solar/device/wire"
)

// AgentVersion checks the binaries against the version they are pushed as,
// which becomes every attempt's targetVersion: a Go binary whose build
// information names another version (wire.BuildVersion) would report that
// one ready, and every device would roll it back at readiness. Without a
// version given, the binaries' own is used when they agree on one. Binaries
// that are not Go programs, or name no version, are not checked.
func AgentVersion(bins []Binary, version string) (string, error) {
	found := map[string][]string{} // version → binaries
	for _, b := range bins {
		bi, err := buildinfo.Read(bytes.NewReader(b.Data))
		if err != nil {
			continue // not a Go program
		}
		if v := wire.BuildVersion(bi); v != "" {
			found[v] = append(found[v], b.Name)
		}
	}
	for v, names := range found {
		if version != "" && v != version {
			return "", fmt.Errorf("%s reports version %q (its Go build information), not --version %q: every device would roll it back at readiness; build it with -ldflags \"-X main.version=%s\" or push it as %s", names[0], v, version, version, v)
		}
	}
	if version != "" {
		return version, nil
	}
	if len(found) == 1 {
		for v := range found {
			return v, nil
		}
	}
	if len(found) > 1 {
		return "", fmt.Errorf("the binaries report different versions %v: push them separately", slices.Sorted(maps.Keys(found)))
	}
	return "", fmt.Errorf("--version is required: the binaries name no version in their build information")
}
