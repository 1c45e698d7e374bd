package helmdriver

import (
	"cmp"
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// values merges spec.valuesFrom in order, then spec.values over them.
func (d *Driver) values(ctx context.Context, ns string, s spec) (map[string]any, error) {
	out := map[string]any{}
	for _, ref := range s.ValuesFrom {
		key := cmp.Or(ref.ValuesKey, "values.yaml")
		var data []byte
		var found bool
		switch ref.Kind {
		case "ConfigMap":
			cm, err := d.client.CoreV1().ConfigMaps(ns).Get(ctx, ref.Name, metav1.GetOptions{})
			if err == nil {
				var v string
				v, found = cm.Data[key]
				data = []byte(v)
			} else if !apierrors.IsNotFound(err) {
				return nil, err
			}
		case "Secret":
			sec, err := d.client.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
			if err == nil {
				data, found = sec.Data[key]
			} else if !apierrors.IsNotFound(err) {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("valuesFrom kind %q", ref.Kind)
		}
		if !found {
			if ref.Optional {
				continue
			}
			return nil, fmt.Errorf("valuesFrom %s %s/%s has no key %s", ref.Kind, ns, ref.Name, key)
		}
		if ref.TargetPath != "" {
			return nil, fmt.Errorf("valuesFrom targetPath is not driven here")
		}
		var v map[string]any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("valuesFrom %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
		}
		merge(out, v)
	}
	merge(out, s.Values)
	return out, nil
}

// merge merges src into dst: maps recursively, anything else replaced.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
