package imagebuild

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"runtime/debug"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SBOM is a CycloneDX 1.6 JSON document of the Go modules linked into the
// binary, read from its build information: the main module as the described
// component, every dependency as a library (see depComponent for replaced
// modules), and the Go standard library as
// "stdlib" at the toolchain's version. It has no timestamp and no serial
// number, so the same binary gives the same bytes.
func SBOM(binary string) ([]byte, error) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", binary, err)
	}
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{Component: moduleComponent(cdx.ComponentTypeApplication, bi.Main)}
	if props := settings(bi); len(props) > 0 {
		bom.Metadata.Component.Properties = &props
	}
	comps := []cdx.Component{*moduleComponent(cdx.ComponentTypeLibrary,
		debug.Module{Path: "stdlib", Version: bi.GoVersion})}
	for _, m := range bi.Deps {
		comps = append(comps, depComponent(m))
	}
	bom.Components = &comps
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, fmt.Errorf("encoding the SBOM of %s: %w", binary, err)
	}
	return buf.Bytes(), nil
}

// depComponent is a linked module: a module replaced by another module is
// that module, which is what was linked; a module replaced by a directory
// keeps its path, without a version, and says which directory.
func depComponent(m *debug.Module) cdx.Component {
	r := m.Replace
	if r == nil {
		return *moduleComponent(cdx.ComponentTypeLibrary, *m)
	}
	if r.Version != "" && r.Version != "(devel)" {
		return *moduleComponent(cdx.ComponentTypeLibrary, *r)
	}
	c := moduleComponent(cdx.ComponentTypeLibrary, debug.Module{Path: m.Path})
	c.Properties = &[]cdx.Property{{Name: "go:replace", Value: r.Path}}
	return *c
}

func moduleComponent(typ cdx.ComponentType, m debug.Module) *cdx.Component {
	purl := "pkg:golang/" + m.Path
	if m.Version == "(devel)" { // the main module built from a checkout
		m.Version = ""
	}
	if m.Version != "" {
		purl += "@" + m.Version
	}
	return &cdx.Component{Type: typ, BOMRef: purl, Name: m.Path, Version: m.Version, PackageURL: purl}
}

// settings are the build settings that decide what the binary is (GOOS,
// GOARCH, CGO_ENABLED, -trimpath, -ldflags, ...), as "go:KEY" properties.
func settings(bi *debug.BuildInfo) []cdx.Property {
	props := make([]cdx.Property, 0, len(bi.Settings))
	for _, s := range bi.Settings {
		props = append(props, cdx.Property{Name: "go:" + s.Key, Value: s.Value})
	}
	return props
}
