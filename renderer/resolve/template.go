package resolve

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

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
	tmpl, err := parseTemplate(sel.Chart.ValuesTemplate)
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
	// ends at its next step (see stoppable), so nothing runs on.
	stop := make(chan struct{})
	tmpl.Funcs(template.FuncMap{stepFunc: stepper(stop)})
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
	var v any
	if err := yaml.Unmarshal([]byte(out), &v); err != nil {
		return "", fmt.Errorf("rendering for Target %s/%s: the output is not YAML: %w", t.Namespace, t.Name, err)
	}
	if _, ok := v.(map[string]any); !ok && v != nil {
		return "", fmt.Errorf("rendering for Target %s/%s: the output is not a YAML mapping of values (found %T)", t.Namespace, t.Name, v)
	}
	return out, nil
}
