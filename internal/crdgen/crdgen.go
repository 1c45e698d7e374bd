// Package crdgen generates the CustomResourceDefinitions of config/crd from
// the CUE schemas, with cuelang.org/go's OpenAPI encoding: the schemas are the
// one source of truth, the CRDs what the API server can express of them.
//
// An API server checks structure, types, patterns, lengths and enums; the
// rules OpenAPI cannot say (exactly one of two fields, a selector's values
// for its operator, references and policies) stay with the CUE schemas,
// which the controller and solar vet run in full.
//
// Run `make crds` after changing a schema; a test fails while config/crd
// differs from what this package generates.
package crdgen

import (
	"encoding/json"
	"fmt"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/encoding/openapi"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/validate"
)

// header opens every generated file.
const header = "# Generated from schemas/*.cue by internal/crdgen (make crds). Do not edit.\n"

// extra is what a CRD says that its kind's schema does not: the status
// subresource's schema, and the columns kubectl get prints.
type extra struct {
	status  string // a definition of the schemas, or "" for no status
	columns []column
}

type column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	JSONPath string `json:"jsonPath"`
}

var extras = map[string]extra{
	"Target": {status: "#TargetStatus", columns: []column{
		{"Ready", "string", `.status.conditions[?(@.type=="Ready")].status`},
		{"Credential", "string", `.status.conditions[?(@.type=="AgentCredentialReady")].reason`},
		{"Version", "string", ".status.bootstrap.version"},
		{"Age", "date", ".metadata.creationTimestamp"},
	}},
	"TargetReport": {columns: []column{
		{"Last report", "date", ".spec.lastReportTime"},
	}},
	// The controller writes a Rollout's progress into its status.
	"Rollout": {status: "#RolloutStatus", columns: []column{
		{"Ready", "string", `.status.conditions[?(@.type=="Ready")].status`},
		{"Age", "date", ".metadata.creationTimestamp"},
	}},
}

// Generate returns the CRD of every kind of the schemas' #Kinds, by file name.
func Generate() (map[string][]byte, error) {
	ctx := cuecontext.New()
	schema, err := validate.Schemas(ctx)
	if err != nil {
		return nil, err
	}
	iter, err := schema.LookupPath(cue.ParsePath("#Kinds")).Fields()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for iter.Next() {
		kind := iter.Selector().Unquoted()
		b, err := generate(ctx, schema, kind)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
		files[FileName(kind)] = b
	}
	return files, nil
}

// FileName is the file of kind's CRD in config/crd.
func FileName(kind string) string {
	return api.Group + "_" + api.Plural(kind) + ".yaml"
}

// generate writes kind's CRD.
func generate(ctx *cue.Context, schema cue.Value, kind string) ([]byte, error) {
	def := schema.LookupPath(cue.MakePath(cue.Def("#" + kind)))
	props := map[string]any{
		"apiVersion": map[string]any{"type": "string"},
		"kind":       map[string]any{"type": "string"},
	}
	name, err := encode(ctx, def.LookupPath(cue.MakePath(cue.Str("metadata"), cue.Str("name").Required())))
	if err != nil {
		return nil, fmt.Errorf("metadata.name: %w", err)
	}
	props["metadata"] = map[string]any{"type": "object", "properties": map[string]any{"name": name}}
	root := map[string]any{"type": "object", "properties": props}

	spec, required, err := field(def, "spec")
	if err != nil {
		return nil, err
	}
	if required {
		root["required"] = []string{"spec"}
	}
	if props["spec"], err = encode(ctx, spec); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	for _, l := range listMaps[kind] {
		listMap(props["spec"], l.path, l.keys...)
	}
	version := map[string]any{
		"name": api.Version, "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": root},
	}
	x := extras[kind]
	if x.status != "" {
		if props["status"], err = encode(ctx, schema.LookupPath(cue.ParsePath(x.status))); err != nil {
			return nil, fmt.Errorf("status: %w", err)
		}
		listMap(props["status"], []string{"conditions"}, "type")
		version["subresources"] = map[string]any{"status": map[string]any{}}
	}
	if len(x.columns) > 0 {
		version["additionalPrinterColumns"] = x.columns
	}
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": api.Plural(kind) + "." + api.Group},
		"spec": map[string]any{
			"group": api.Group,
			"names": map[string]any{
				"kind": kind, "listKind": kind + "List",
				"plural": api.Plural(kind), "singular": strings.ToLower(kind),
			},
			"scope":    "Namespaced",
			"versions": []any{version},
		},
	}
	b, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	return append([]byte(header), b...), nil
}

// encode is v's OpenAPI schema, made structural for an API server.
func encode(ctx *cue.Context, v cue.Value) (map[string]any, error) {
	if !v.Exists() {
		return nil, fmt.Errorf("not in the schemas")
	}
	wrap := ctx.CompileString("#S: _").FillPath(cue.ParsePath("#S"), v)
	b, err := openapi.Gen(wrap, &openapi.Config{ExpandReferences: true})
	if err != nil {
		return nil, err
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	s, ok := doc.Components.Schemas["S"]
	if !ok {
		return nil, fmt.Errorf("the OpenAPI encoding has no schema")
	}
	structural(s)
	return s, nil
}

// structural rewrites what OpenAPI allows and a structural schema does not:
// an open struct ({...}, additionalProperties: {}) and a map whose keys are
// constrained by a pattern (an object without properties) keep every field
// (x-kubernetes-preserve-unknown-fields) instead of being pruned; CUE checks
// them in full.
func structural(s map[string]any) {
	if s["type"] == "object" {
		ap, hasAP := s["additionalProperties"].(map[string]any)
		_, hasProps := s["properties"]
		if (hasAP && len(ap) == 0) || (!hasAP && !hasProps) {
			delete(s, "additionalProperties")
			s["x-kubernetes-preserve-unknown-fields"] = true
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				structural(m)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if m, ok := s[k].(map[string]any); ok {
			structural(m)
		}
	}
}

// field is the field name of def (spec), and whether it is required (spec!)
// rather than optional (spec?).
func field(def cue.Value, name string) (cue.Value, bool, error) {
	iter, err := def.Fields(cue.Optional(true))
	if err != nil {
		return cue.Value{}, false, err
	}
	for iter.Next() {
		if sel := iter.Selector(); sel.Unquoted() == name {
			return iter.Value(), sel.ConstraintType() == cue.RequiredConstraint, nil
		}
	}
	return cue.Value{}, false, fmt.Errorf("no field %s", name)
}

// listMaps are the lists of a kind's spec that are maps by their keys, as
// Kubernetes marks them: a server-side apply merges their entries by key,
// and the API server refuses two entries with the same key.
var listMaps = map[string][]struct {
	path []string
	keys []string
}{
	"TargetReport": {
		{[]string{"releases"}, []string{"name", "namespace"}},
		{[]string{"releases", "[]", "sourceConditions"}, []string{"type"}},
		{[]string{"releases", "[]", "helmConditions"}, []string{"type"}},
		{[]string{"preflight", "checks"}, []string{"type"}},
	},
	// Wave names are unique within a Rollout (solar vet checks it): the API
	// server refuses two waves of one name too.
	"Rollout": {
		{[]string{"waves"}, []string{"name"}},
	},
}

// listMap marks the list at path below schema s ("[]" steps into a list's
// items) as a map keyed by keys.
func listMap(s any, path []string, keys ...string) {
	m, _ := s.(map[string]any)
	for _, step := range path {
		if step == "[]" {
			m, _ = m["items"].(map[string]any)
			continue
		}
		props, _ := m["properties"].(map[string]any)
		m, _ = props[step].(map[string]any)
	}
	if m != nil {
		m["x-kubernetes-list-type"] = "map"
		m["x-kubernetes-list-map-keys"] = keys
	}
}
