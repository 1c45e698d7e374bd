package model

import (
	"encoding/json"
	"strings"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
)

// Slim decodes the loaded object o into its typed form, for NewSetOf, and
// then keeps of its Fields only what the rest of a run reads there: its
// apiVersion, kind, name and namespace and its references (References).
// Its positions stay. A run of 100,000 Targets holds each as read only
// until it is checked: the typed form is a fraction of the maps (see
// docs/benchmarks.md). Only Targets are slimmed (the bulk of an input;
// other kinds' Fields are read later); other kinds return nil.
func Slim(o *load.Object) (any, error) {
	if o.Kind != api.KindTarget {
		return nil, nil
	}
	t, err := decode[Target](o)
	if err != nil {
		return nil, err
	}
	kept := map[string]any{"apiVersion": o.Fields["apiVersion"], "kind": o.Fields["kind"],
		"metadata": map[string]any{"name": o.Name, "namespace": o.Namespace}}
	for _, r := range References {
		if r.From != o.Kind {
			continue
		}
		if v, ok := field(o.Fields, r.Field); ok {
			setField(kept, r.Field, v)
		}
	}
	o.Fields = kept
	return t, nil
}

// decode is o's typed form.
func decode[T any](o *load.Object) (*T, error) {
	raw, err := json.Marshal(o.Fields)
	if err != nil {
		return nil, err
	}
	v := new(T)
	return v, json.Unmarshal(raw, v)
}

// setField sets the dotted path of fields to v, making the maps on the way.
func setField(fields map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	for _, key := range keys[:len(keys)-1] {
		next, ok := fields[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			fields[key] = next
		}
		fields = next
	}
	fields[keys[len(keys)-1]] = v
}
