package resolve

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/helmyaml"
	"github.com/solar-pipeline/solar/renderer/model"
)

// Limits of one valuesTemplate rendering: templates come from pull requests.
const (
	MaxTemplateOutput = 1 << 20
	TemplateTimeout   = 2 * time.Second
)

// formatters turn a value into text that is safe in YAML; an action that
// ends in one of them prints what it returns.
var formatters = map[string]bool{"toYaml": true, "toJson": true, "quote": true, "indent": true, "nindent": true}

var templateFuncs = template.FuncMap{
	"toYaml": func(v any) (string, error) {
		b, err := helmyaml.Marshal(v)
		return strings.TrimSuffix(string(b), "\n"), err
	},
	"toJson": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"quote": func(v any) string { return strconv.Quote(fmt.Sprint(v)) },
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	},
	"nindent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	},
	scalarFunc: scalar,
}

const scalarFunc = "solarScalar"

// unsafeError: a value printed as it is could add keys to the values.
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string { return e.msg }

// scalar lets through what prints safely inside one YAML line: a map, a list
// or a multi-line string printed as it is could add keys to the values.
func scalar(v any) (any, error) {
	switch v := v.(type) {
	case string:
		if strings.ContainsAny(v, "\n\r") {
			return nil, &unsafeError{"a multi-line string printed as it is could add keys to the values: pipe it through toYaml, toJson or quote"}
		}
	case map[string]any, []any:
		return nil, &unsafeError{"a map or list printed as it is: pipe it through toYaml or toJson"}
	}
	return v, nil
}

// parseTemplate parses a valuesTemplate and makes every action that prints a
// value without a formatter check that the value is a one-line scalar.
func parseTemplate(text string) (*template.Template, error) {
	tmpl, err := template.New("valuesTemplate").Option("missingkey=error").Funcs(templateFuncs).Parse(text)
	if err != nil {
		return nil, err
	}
	if tmpl.Tree != nil {
		guard(tmpl.Tree, tmpl.Tree.Root)
	}
	return tmpl, nil
}

func guard(tree *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				guard(tree, c)
			}
		}
	case *parse.IfNode:
		guard(tree, n.List)
		guard(tree, n.ElseList)
	case *parse.RangeNode:
		guard(tree, n.List)
		guard(tree, n.ElseList)
	case *parse.WithNode:
		guard(tree, n.List)
		guard(tree, n.ElseList)
	case *parse.ActionNode:
		cmds := n.Pipe.Cmds
		if len(n.Pipe.Decl) > 0 || len(cmds) == 0 {
			return
		}
		if id, ok := cmds[len(cmds)-1].Args[0].(*parse.IdentifierNode); ok && formatters[id.Ident] {
			return
		}
		id := parse.NewIdentifier(scalarFunc).SetTree(tree).SetPos(n.Pos)
		n.Pipe.Cmds = append(cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
	}
}

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
	// text/template cannot be stopped: a loop that outlives the deadline is
	// abandoned, and the run fails.
	go func() { done <- tmpl.Execute(w, data) }()
	select {
	case err = <-done:
	case <-time.After(TemplateTimeout):
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
