package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"

	"go.yaml.in/yaml/v3"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/helmyaml"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// Dir is a chart directory of Solar's own (charts/solar-controller),
// published as it is but for its version, its appVersion and the values Set
// gives: packaged reproducibly as Source is, so that the same directory and
// settings give the same chart and a version rises only with them.
type Dir struct {
	// FS holds the chart's directory: Chart.yaml, values.yaml, templates/.
	FS fs.FS
	// AppVersion replaces Chart.yaml's appVersion ("": kept).
	AppVersion string
	// Set replaces values by dotted path (image.digest) in values.yaml,
	// whose comments are kept; each path must be there.
	Set map[string]string
}

// Package writes the chart at version as a reproducible .tgz.
func (d Dir) Package(version string) (*Packaged, error) {
	raw, err := fs.ReadFile(d.FS, "Chart.yaml")
	if err != nil {
		return nil, err
	}
	var meta helmchart.Metadata
	if err := sigyaml.UnmarshalStrict(raw, &meta); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %w", err)
	}
	meta.Version = version
	if d.AppVersion != "" {
		meta.AppVersion = d.AppVersion
	}
	if err := meta.Validate(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", meta.Name, err)
	}
	files := map[string][]byte{}
	err = fs.WalkDir(d.FS, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		files[p], err = fs.ReadFile(d.FS, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	if files["Chart.yaml"], err = helmyaml.Marshal(&meta); err != nil {
		return nil, err
	}
	if files["values.yaml"], err = setValues(files["values.yaml"], d.Set); err != nil {
		return nil, fmt.Errorf("chart %s: values.yaml: %w", meta.Name, err)
	}
	archive, err := tgz(meta.Name, files)
	if err != nil {
		return nil, err
	}
	config, err := json.Marshal(&meta)
	if err != nil {
		return nil, err
	}
	return &Packaged{Name: meta.Name, Version: version, Archive: archive, Config: config,
		Layer: descriptor(api.MediaTypeHelmChart, archive), ConfigDesc: descriptor(api.MediaTypeHelmConfig, config)}, nil
}

// Job publishes the chart into repository, at the version its content needs.
func (d Dir) Job(repository string, opts Options) publish.Job {
	return publish.Job{Repository: repository, Pack: func(version string) (*publish.Artifact, error) {
		p, err := d.Package(version)
		if err != nil {
			return nil, err
		}
		return p.artifact(opts), nil
	}}
}

// setValues replaces the scalars at the dotted paths of set in the YAML
// document raw, keeping its comments and order.
func setValues(raw []byte, set map[string]string) ([]byte, error) {
	if len(set) == 0 {
		return raw, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	for p, v := range set {
		n := &doc
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
			n = n.Content[0]
		}
		for _, key := range strings.Split(p, ".") {
			n = mappingValue(n, key)
			if n == nil {
				return nil, fmt.Errorf("no value %s to set", p)
			}
		}
		if n.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s is not a single value", p)
		}
		n.Value, n.Tag, n.Style = v, "!!str", yaml.DoubleQuotedStyle
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// mappingValue is the value of key in the mapping n, nil if none.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
