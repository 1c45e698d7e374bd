package resolve

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/solar-pipeline/solar/internal/helmyaml"
)

// formatters turn a value into text that is safe in YAML; an action that
// ends in one of them prints what it returns.
var formatters = map[string]bool{"toYaml": true, "toJson": true, "quote": true, "indent": true, "nindent": true}

// templateFuncs are the functions a valuesTemplate may call. Every one that
// builds a string, the builtins among them, refuses a result longer than
// the output may be: a string grown in a loop (doubled, quoted, escaped)
// would otherwise fill memory long before the deadline.
var templateFuncs = template.FuncMap{
	"toYaml": func(v any) (string, error) {
		b, err := helmyaml.Marshal(v)
		if err != nil {
			return "", err
		}
		return boundedString(strings.TrimSuffix(string(b), "\n"))
	},
	"toJson": func(v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		return boundedString(string(b))
	},
	"quote":    func(v any) (string, error) { return boundedString(strconv.Quote(fmt.Sprint(v))) },
	"indent":   func(n int, s string) (string, error) { return indent(n, s, "") },
	"nindent":  func(n int, s string) (string, error) { return indent(n, s, "\n") },
	"printf":   bounded,
	"print":    func(a ...any) (string, error) { return boundedString(fmt.Sprint(a...)) },
	"println":  func(a ...any) (string, error) { return boundedString(fmt.Sprintln(a...)) },
	"html":     func(a ...any) (string, error) { return boundedString(template.HTMLEscaper(a...)) },
	"js":       func(a ...any) (string, error) { return boundedString(template.JSEscaper(a...)) },
	"urlquery": func(a ...any) (string, error) { return boundedString(template.URLQueryEscaper(a...)) },
	scalarFunc: scalar,
	stepFunc:   func() string { return "" }, // each execution's own replaces it (stepper)
}

const (
	scalarFunc = "solarScalar"
	stepFunc   = "solarStep"
)

// errTooLong: a value that could not be printed within MaxTemplateOutput.
var errTooLong = fmt.Errorf("the output is longer than %d bytes", MaxTemplateOutput)

// indent puts n spaces before each line of s, after lead; a result longer
// than the output may be is refused before it is built.
func indent(n int, s, lead string) (string, error) {
	if n < 0 || n > MaxTemplateOutput || len(lead)+len(s)+(strings.Count(s, "\n")+1)*n > MaxTemplateOutput {
		return "", errTooLong
	}
	pad := strings.Repeat(" ", n)
	return lead + pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

// wideVerb is a width or precision of five digits or more, or one taken
// from the arguments: fmt builds up to a million bytes for each such verb
// before the result can be measured.
var wideVerb = regexp.MustCompile(`%[-+# 0]*(?:\[\d+\])?(?:\*|\d{5,}|\d*\.(?:\[\d+\])?(?:\*|\d{5,}))`)

func bounded(format string, a ...any) (string, error) {
	if wideVerb.MatchString(format) {
		return "", fmt.Errorf("printf: a width or precision of 10000 or more, or taken from the arguments, is not allowed")
	}
	return boundedString(fmt.Sprintf(format, a...))
}

func boundedString(s string) (string, error) {
	if len(s) > MaxTemplateOutput {
		return "", errTooLong
	}
	return s, nil
}

// errStopped ends an execution its caller no longer waits for.
var errStopped = errors.New("stopped: the deadline passed")

// stepper is the step function of one execution: nothing until stop is
// closed, then an error that ends the execution where it is.
func stepper(stop <-chan struct{}) func() (string, error) {
	return func() (string, error) {
		select {
		case <-stop:
			return "", errStopped
		default:
			return "", nil
		}
	}
}

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

// parseTemplate parses a valuesTemplate and guards every template in it
// (the main one and each define or block, which are called as they are):
// every action that prints a value without a formatter checks that the
// value is a one-line scalar, and each loop iteration begins with a step,
// where an execution its caller stopped waiting for ends (a loop runs on
// otherwise; a template that calls itself ends at text/template's depth).
func parseTemplate(text string) (*template.Template, error) {
	tmpl, err := template.New("valuesTemplate").Option("missingkey=error").Funcs(templateFuncs).Parse(text)
	if err != nil {
		return nil, err
	}
	for _, t := range tmpl.Templates() {
		if t.Tree != nil && t.Tree.Root != nil {
			guard(t.Tree, t.Tree.Root)
		}
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
		if n.List != nil {
			n.List.Nodes = append([]parse.Node{step(tree, n.Pos)}, n.List.Nodes...)
		}
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
		n.Pipe.Cmds = append(cmds, call(tree, scalarFunc, n.Pos))
	}
}

// step is an action that calls the execution's step function and prints
// the nothing it returns.
func step(tree *parse.Tree, pos parse.Pos) parse.Node {
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos,
		Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Cmds: []*parse.CommandNode{call(tree, stepFunc, pos)}}}
}

func call(tree *parse.Tree, name string, pos parse.Pos) *parse.CommandNode {
	id := parse.NewIdentifier(name).SetTree(tree).SetPos(pos)
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{id}}
}
