package model

import (
	"encoding/json"
	"strings"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
)

// Slimmer slims the Targets of one run (Slim); objects that hold the same
// references share their slimmed Fields, and Targets with the same labels
// one map of them.
type Slimmer struct {
	kept   map[string]map[string]any
	labels map[string]map[string]string
}

// Slim decodes the loaded object o into its typed form, for NewSetOf, and
// then keeps of its Fields only what the rest of a run reads there: its
// references (References, for the reference checks and a scoped run's
// closure). Its positions stay. A run of 100,000 Targets holds each as read
// only until it is checked: the typed form is a fraction of the maps (see
// docs/benchmarks.md). Targets naming the same references (a namespace's
// usually name one Registry) share one map of them: nothing changes Fields
// after loading. Only Targets are slimmed (the bulk of an input; other
// kinds' Fields are read later); other kinds return nil. Slim is not safe
// for concurrent use.
func (sl *Slimmer) Slim(o *load.Object) (any, error) {
	if o.Kind != api.KindTarget {
		return nil, nil
	}
	t, err := decode[Target](o)
	if err != nil {
		return nil, err
	}
	t.Labels = sl.shared(t.Labels)
	kept := map[string]any{}
	for _, r := range References {
		if r.From != o.Kind {
			continue
		}
		if v, ok := field(o.Fields, r.Field); ok {
			setField(kept, r.Field, v)
		}
	}
	key, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	if sl.kept == nil {
		sl.kept = map[string]map[string]any{}
	}
	if shared, ok := sl.kept[string(key)]; ok {
		kept = shared
	} else {
		sl.kept[string(key)] = kept
	}
	o.Fields = kept
	return t, nil
}

// shared is labels, or the equal map an earlier Target of the run holds:
// the Targets of a fleet mostly repeat a few sets of labels, and a map
// costs about 300 bytes (30 MB at 100,000 Targets). Nothing changes a
// Target's labels after loading.
func (sl *Slimmer) shared(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return labels
	}
	key, err := json.Marshal(labels) // sorted keys
	if err != nil {
		return labels
	}
	if sl.labels == nil {
		sl.labels = map[string]map[string]string{}
	}
	if same, ok := sl.labels[string(key)]; ok {
		return same
	}
	sl.labels[string(key)] = labels
	return labels
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
