package resolve

import (
	"errors"
	"fmt"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/renderer/model"
)

// Limits of one valuesTemplate rendering: templates come from pull requests.
const (
	MaxTemplateOutput = 1 << 20
	TemplateTimeout   = 2 * time.Second
)

// limitWriter fails a write beyond max bytes: template execution stops there.
type limitWriter struct {
	b   strings.Builder
	max int
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.max {
		return 0, fmt.Errorf("the output is longer than %d bytes", w.max)
	}
	return w.b.Write(p)
}

// valuesTemplate renders the ComponentVersion's valuesTemplate for a Target,
// at most MaxTemplateOutput bytes within TemplateTimeout, into a YAML mapping.
func valuesTemplate(t *model.Target, sel *Selected) (string, error) {
	stop := make(chan struct{})
	tmpl, err := parseTemplate(sel.Chart.ValuesTemplate, &rendering{stop: stop})
	if err != nil {
		return "", err
	}
	userdata := t.Spec.Userdata
	if userdata == nil {
		userdata = map[string]any{}
	}
	data := map[string]any{
		"Target":  map[string]any{"Name": t.Name, "Namespace": t.Namespace, "Labels": t.Labels, "Userdata": userdata},
		"Release": map[string]any{"Name": sel.Release.Name, "Namespace": sel.Release.Namespace},
	}
	w := &limitWriter{max: MaxTemplateOutput}
	done := make(chan error, 1)
	// text/template has no deadline of its own: the caller stops waiting
	// at TemplateTimeout, and the loop or template call the execution is in
	// ends at its next step (parseTemplate), so nothing runs on.
	go func() { done <- tmpl.Execute(w, data) }()
	select {
	case err = <-done:
	case <-time.After(TemplateTimeout):
		close(stop)
		err = fmt.Errorf("did not finish within %s", TemplateTimeout)
	}
	if unsafe, ok := errors.AsType[*unsafeError](err); ok {
		// "template: valuesTemplate:1:12: executing ...": keep where.
		where, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), "template: "), ": executing")
		err = fmt.Errorf("%s: %w", where, unsafe)
	}
	if err != nil {
		return "", fmt.Errorf("rendering for Target %s/%s: %w", t.Namespace, t.Name, err)
	}
	out := w.b.String()
	if err := noAliases(out); err != nil {
		return "", fmt.Errorf("rendering for Target %s/%s: %w", t.Namespace, t.Name, err)
	}
	var v any
	if err := yaml.Unmarshal([]byte(out), &v); err != nil {
		return "", fmt.Errorf("rendering for Target %s/%s: the output is not YAML: %w", t.Namespace, t.Name, err)
	}
	if _, ok := v.(map[string]any); !ok && v != nil {
		return "", fmt.Errorf("rendering for Target %s/%s: the output is not a YAML mapping of values (found %T)", t.Namespace, t.Name, v)
	}
	return out, nil
}

// noAliases refuses an output with a YAML alias: each alias is a copy of
// its anchor's value once the values are read, so 1 MiB of aliases to a
// large anchor is gigabytes. Output that is not YAML is left to the
// parse that says so; output without a '*' has no alias and is not parsed
// twice (every Target's values are rendered on vet's and render's path).
func noAliases(out string) error {
	if !strings.Contains(out, "*") {
		return nil
	}
	var doc yamlv3.Node
	if yamlv3.Unmarshal([]byte(out), &doc) != nil {
		return nil
	}
	var alias func(*yamlv3.Node) *yamlv3.Node
	alias = func(n *yamlv3.Node) *yamlv3.Node {
		if n.Kind == yamlv3.AliasNode {
			return n
		}
		for _, c := range n.Content {
			if a := alias(c); a != nil {
				return a
			}
		}
		return nil
	}
	if a := alias(&doc); a != nil {
		return fmt.Errorf("line %d: the output has an alias (*%s): anchors and aliases are not allowed in values", a.Line, a.Value)
	}
	return nil
}
