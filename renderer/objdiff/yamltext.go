package objdiff

import (
	"encoding/json"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// marshalYAML is body as YAML, byte for byte what sigs.k8s.io/yaml.Marshal
// makes of it, at a fraction of the cost: that goes through JSON, and
// go-yaml then parses the whole JSON text again to tell integers from
// floats (a fifth of a 500-Target diff's allocations). Here only each
// number's JSON text is parsed (yamlTree); body is what decode made of a
// document (maps, lists, strings, float64, bools, nil), else the round trip
// is taken.
func marshalYAML(body map[string]any) ([]byte, error) {
	tree, ok, err := yamlTree(body)
	if err != nil {
		return nil, err
	}
	if !ok {
		return yaml.Marshal(body)
	}
	return yamlv2.Marshal(tree)
}

// yamlTree is v as go-yaml reads it back from its JSON text: every number
// as go-yaml reads the number's JSON (10 an int, 1e+21 a float), the rest
// as it is; ok is false for a value of another type.
func yamlTree(v any) (_ any, ok bool, _ error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			t, ok, err := yamlTree(e)
			if !ok || err != nil {
				return nil, ok, err
			}
			out[k] = t
		}
		return out, true, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			t, ok, err := yamlTree(e)
			if !ok || err != nil {
				return nil, ok, err
			}
			out[i] = t
		}
		return out, true, nil
	case float64:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, true, err
		}
		var n any
		err = yamlv2.Unmarshal(b, &n)
		return n, true, err
	case string, bool, nil:
		return v, true, nil
	}
	return nil, false, nil
}
