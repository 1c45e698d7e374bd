package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/charts"
	"github.com/solar-pipeline/solar/internal/helmyaml"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// Options are the packaging settings that are not content.
type Options struct {
	// Created is the manifest's created annotation; the zero value means the
	// Unix epoch. The CLI sets it from SOURCE_DATE_EPOCH. The chart's bytes
	// never depend on it (tar entries are at the epoch), so a new time alone
	// is no new content.
	Created time.Time
}

// Source is a chart without its version: its name, Chart.yaml fields, values
// and the embedded templates it uses.
type Source struct {
	Name        string
	Description string
	AppVersion  string
	Annotations map[string]string
	Values      map[string]any
	// Templates is the directory of charts.FS with the chart's templates.
	Templates string
}

// Packaged is a chart at one version: the .tgz (the OCI layer) and the Helm
// OCI config, with their descriptors.
type Packaged struct {
	Name    string
	Version string
	Archive []byte
	Config  []byte
	Layer   ocispec.Descriptor
	// ConfigDesc describes Config.
	ConfigDesc ocispec.Descriptor
}

// Package writes the chart at version as a reproducible .tgz: entries in
// lexical order under <name>/, fixed times, uid/gid 0 without names, mode
// 0644, and a gzip header without name or time.
func (s *Source) Package(version string, opts Options) (*Packaged, error) {
	meta := &helmchart.Metadata{
		APIVersion:  helmchart.APIVersionV2,
		Name:        s.Name,
		Version:     version,
		Description: s.Description,
		AppVersion:  s.AppVersion,
		Type:        "application",
		Annotations: s.Annotations,
	}
	if err := meta.Validate(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", s.Name, err)
	}
	files, err := s.files(meta)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", s.Name, err)
	}
	archive, err := tgz(s.Name, files)
	if err != nil {
		return nil, fmt.Errorf("packaging chart %s: %w", s.Name, err)
	}
	config, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("chart %s: config: %w", s.Name, err)
	}
	return &Packaged{
		Name:       s.Name,
		Version:    version,
		Archive:    archive,
		Config:     config,
		Layer:      descriptor(api.MediaTypeHelmChart, archive),
		ConfigDesc: descriptor(api.MediaTypeHelmConfig, config),
	}, nil
}

func descriptor(mediaType string, b []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
}

// files returns the chart's files by path: Chart.yaml, values.yaml, the common
// helpers and the chart's templates.
func (s *Source) files(meta *helmchart.Metadata) (map[string][]byte, error) {
	chartYAML, err := helmyaml.Marshal(meta)
	if err != nil {
		return nil, err
	}
	values, err := helmyaml.Marshal(s.Values)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files := map[string][]byte{"Chart.yaml": chartYAML, "values.yaml": values}
	for _, dir := range []string{"common", s.Templates + "/templates"} {
		entries, err := fs.ReadDir(charts.FS, dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			b, err := fs.ReadFile(charts.FS, path.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			files["templates/"+e.Name()] = b
		}
	}
	return files, nil
}

// gzipWriters are reused: a compressor allocates about a megabyte of state.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestCompression) // a valid level: no error
	return zw
}}

// tgz is the deterministic tar writer: Helm's own writes the host's times and
// user into the archive.
func tgz(name string, files map[string][]byte) ([]byte, error) {
	mtime := publish.Epoch
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	// Reset gives a fresh stream and a header without name or time.
	zw.Reset(&buf)
	tw := tar.NewWriter(zw)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		b := files[p]
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     name + "/" + p,
			Mode:     0o644,
			Size:     int64(len(b)),
			ModTime:  mtime.UTC().Truncate(time.Second),
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
