package wire

import (
	"runtime/debug"
	"strings"
)

// BuildVersion is the version a Go agent binary reports ready with, read
// from its build information: the value linked into main.version
// (-ldflags "-X main.version=V") when there is one, else the main module's
// version that go build stamps from version control. "" when neither is
// known ("(devel)"). The reference agent reports it, and solar fleet
// push-agent checks a binary's against the version it is pushed as, so that
// an attempt's targetVersion is what the binary reports.
func BuildVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "-ldflags" {
			if v, ok := linkedVersion(s.Value); ok {
				return v
			}
		}
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return ""
}

// linkedVersion finds "-X main.version=V" (or "-X=main.version=V") in the
// linker flags.
func linkedVersion(ldflags string) (string, bool) {
	fields := strings.Fields(ldflags)
	for i := range fields {
		fields[i] = strings.Trim(fields[i], `'"`)
	}
	for i, f := range fields {
		value := ""
		switch {
		case f == "-X" && i+1 < len(fields):
			value = fields[i+1]
		case strings.HasPrefix(f, "-X="):
			value = strings.TrimPrefix(f, "-X=")
		}
		if v, ok := strings.CutPrefix(value, "main.version="); ok {
			return v, true
		}
	}
	return "", false
}
